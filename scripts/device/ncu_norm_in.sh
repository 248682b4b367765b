#!/usr/bin/env bash
# ncu of the NORM_IN twins against the kernels they replace (norm_in_test's first cases: the
# Llama-3.1-8B qkv at one row, then its gate/up with SiLU): duration, occupancy and its limits,
# shared memory per CTA and the SM's shared-memory configuration.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/ncu_norm_in.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin ncu_norm_in "${BUDGET:-300}" "${1:?OUTDIR}" build
metrics=gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers
metrics+=,launch__occupancy_limit_blocks,launch__occupancy_limit_warps
metrics+=,launch__shared_mem_config_size,launch__shared_mem_per_block_dynamic
metrics+=,launch__registers_per_thread,launch__grid_size,launch__block_size
metrics+=,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
for skip in 0 16; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" ncu --kernel-name regex:qmv_affine_mma_kernel \
    --launch-skip $skip --launch-count 4 --metrics "$metrics" \
    "$BUILD/tests/device/norm_in_test" --gtest_filter='*TheDefaults*' >"$R/ncu_$skip.log" 2>&1
  stamp "ncu skip $skip" $?
  grep -E "qmv_affine_mma_kernel|duration|occupancy|shared_mem|registers|grid_size|block_size|warps_active|inst_executed|bank_conflicts" \
    "$R/ncu_$skip.log" | sed -E 's/hone::cuda::qmv_affine_detail::qmv_affine_mma_kernel/K/; s/\(hone::cuda::qmv_affine_detail::Params\).*//' | head -64
done
pack

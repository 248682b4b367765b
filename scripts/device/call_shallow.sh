#!/usr/bin/env bash
# One call (~5 min): the shallow kernels (`shallow=2|4`, qmv.affine: a warp's whole K slice in
# registers at once, 64-96 registers) against the register pipeline and PyTorch's int4 kernel on
# the small matrices, where a rows-1 launch is latency-bound (docs/notes/qmv_affine.md, v25).
# - The qmv.affine kernel test on the reduced shapes: every config, the shallow ones included,
#   against the reference and bitwise against the register pipeline of its k_slices; the config
#   tests (spelling, can_implement, no spills). The op test.
# - The harness (mma path, every config) on 896 x 896, 2048 x 2048, 4096 x 4096 and 6144 x 4096,
#   int4 g64 and g128, rows 1 and 8: the shallow configs beside the default and the rest.
# - qmv_torch_peer.sh at rows 1 with batch-invariant tunes (as call3 of
#   docs/benchmark_results/2026-12-07-5, which ran the build before).
# - compute-sanitizer memcheck and racecheck of the shallow configs (HONE_TEST_TACTIC_HAS).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_shallow.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin shallow "${BUDGET:-330}" "${1:?OUTDIR}" build
cat "$R/gpu.txt"
device_tests qmv_affine_kernel_test qmv_affine_op_test
pack
HONE_TEST_PATHS=mma timeout "$(cap 70)" "$BUILD/bench/qmv_affine_harness" --no-check \
  --shapes 896x896,2048x2048,4096x4096,6144x4096 --rows 1,8 --formats 4x64,4x128 \
  --csv "$R/harness.csv" >"$R/harness.log" 2>&1
stamp harness $?
pack
HONE_TEST_TACTIC_HAS=shallow= HONE_TEST_PATHS=mma \
  sanitize shallow qmv_affine_kernel_test '*EveryConfigMatchesReference*'
bash scripts/device/qmv_torch_peer.sh "$OUTDIR" "$BUILD" 1 4:64,4:128 batch_invariant \
  >"$R/torch_peer.out" 2>&1
stamp "qmv_torch_peer batch_invariant" $?
sed -n '/| bits/,$p' "$R/torch_peer.out"
pack

#!/usr/bin/env bash
# Call 1: the mma path with K split across warps (tile_k 128 and 256) beside the 64-deep
# kernels. Device tests (every compiled config against the float64 reference, leftovers),
# compute-sanitizer memcheck and racecheck on the leftover test (reduced shapes), qmm.affine
# tunes of the four Llama-3.1-8B int4 g64 shapes at 16, 32 and 64 rows, op_matrix on the same
# cells (default, pick, cuBLASLt BF16 dense in one process), and one ncu profile. Writes
# straight into $OUT, so what finished comes back if the call is cut.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 570 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT; mkdir -p $R/cache; H=build/tools/hone/hone; T=build/tests/device/qmm_affine_op_test
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cuobjdump --dump-resource-usage $T 2>&1 | grep -A1 qmm_affine_mma_kernel > $R/mma_resources.txt
export HONE_CACHE_DIR=$R/cache
timeout 150 $T --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test.log
: > $R/shapes.txt
for nk in "n=4096,k=4096" "n=28672,k=4096" "n=4096,k=14336" "n=6144,k=4096"; do
  for r in 16 64 32; do
    [ $(left) -lt 250 ] && break 2
    timeout 45 $H --backend cuda tune --op qmm.affine --shape "rows=$r,$nk,bits=4,group=64" --json $R/tune_${nk//[=,]/_}_r$r.json >> $R/tune.log 2>&1; echo "rc=$? rows=$r $nk $(( $(date +%s) - T0 )) s" >> $R/tune.log
    echo "quick: rows=$r, ${nk/,/, }, bits=4, group=64" >> $R/shapes.txt
  done
done
timeout 80 build/bench/op_matrix --op qmm.affine --shapes $R/shapes.txt --set quick --samples 7 --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/qmm_matrix.log
for tool in memcheck racecheck; do
  HONE_DEVICE_TEST_REDUCED=1 timeout $(( $(left) > 160 ? 75 : $(left) / 2 - 5 )) compute-sanitizer --tool $tool --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_$tool.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_$tool.log
done
[ $(left) -gt 30 ] && timeout $(( $(left) - 5 )) ncu --kernel-name regex:qmm_affine_mma --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats $H --backend cuda bench --op qmm.affine --shape rows=64,n=4096,k=4096,bits=4,group=64 --tactic 'qmm.affine.mma:tile_m=64,tile_n=64,tile_k=256,stages=3,warps=16,split_k=2' --samples 3 > $R/ncu.log 2>&1; echo "rc=$?" >> $R/ncu.log
[ $(left) -gt 30 ] && timeout $(( $(left) - 5 )) ncu --kernel-name regex:qmm_affine_mma --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats $H --backend cuda bench --op qmm.affine --shape rows=16,n=28672,k=4096,bits=4,group=64 --tactic 'qmm.affine.mma:tile_m=16,tile_n=64,tile_k=256,stages=3,warps=16,split_k=1' --samples 3 > $R/ncu_r16.log 2>&1; echo "rc=$?" >> $R/ncu_r16.log
echo "total $(( $(date +%s) - T0 )) s" >> $R/test.log

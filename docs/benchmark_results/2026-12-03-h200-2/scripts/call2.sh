#!/usr/bin/env bash
# Call 2: call 1 again after the register budgets (2-6 CTAs per SM where no spill follows) and
# three 16-warp kernels of 128 weight rows (tile_k 128); plus compute-sanitizer racecheck
# through `hone bench` on one kernel per tile_k (the leftover test under racecheck outran its
# limit in call 1), and two ncu profiles. Results in $OUT/r, packed into results.tar.gz at the
# end (at most 8 files come back); the logs that matter most are copied beside it as they finish.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 575 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache; H=build/tools/hone/hone; T=build/tests/device/qmm_affine_op_test
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cuobjdump --dump-resource-usage $T 2>&1 | grep -A1 qmm_affine_mma_kernel > $R/mma_resources.txt
export HONE_CACHE_DIR=$R/cache
timeout 180 $T --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test.log
cp $R/test.log $OUT/; pack
: > $R/shapes.txt
for nk in "n=4096,k=4096" "n=28672,k=4096" "n=4096,k=14336" "n=6144,k=4096"; do
  for r in 16 64 32; do
    [ $(left) -lt 300 ] && break 2
    timeout 45 $H --backend cuda tune --op qmm.affine --shape "rows=$r,$nk,bits=4,group=64" --json $R/tune_${nk//[=,]/_}_r$r.json >> $R/tune.log 2>&1; echo "rc=$? rows=$r $nk $(( $(date +%s) - T0 )) s" >> $R/tune.log
    echo "quick: rows=$r, ${nk/,/, }, bits=4, group=64" >> $R/shapes.txt
  done
done
timeout 80 build/bench/op_matrix --op qmm.affine --shapes $R/shapes.txt --set quick --samples 7 --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/qmm_matrix.log
cp $R/qmm_matrix.log $OUT/; pack
HONE_DEVICE_TEST_REDUCED=1 timeout 70 compute-sanitizer --tool memcheck --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_memcheck.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_memcheck.log
for tac in "tile_m=16,tile_n=64,tile_k=256,stages=3,warps=16,split_k=2" "tile_m=64,tile_n=128,tile_k=128,stages=3,warps=16,split_k=2" "tile_m=32,tile_n=128,tile_k=64,stages=3,warps=8,split_k=2"; do
  [ $(left) -lt 120 ] && break
  timeout 35 compute-sanitizer --tool racecheck --error-exitcode 86 $H --backend cuda bench --op qmm.affine --shape rows=37,n=1000,k=1280,bits=4,group=64 --tactic "qmm.affine.mma:$tac" --samples 1 >> $R/sanitizer_racecheck.log 2>&1; echo "rc=$? $tac $(( $(date +%s) - T0 )) s" >> $R/sanitizer_racecheck.log
done
cp $R/sanitizer_*.log $OUT/; pack
NCU="ncu --kernel-name regex:qmm_affine_mma --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats"
[ $(left) -gt 60 ] && timeout 45 $NCU $H --backend cuda bench --op qmm.affine --shape rows=64,n=4096,k=4096,bits=4,group=64 --tactic 'qmm.affine.mma:tile_m=64,tile_n=128,tile_k=128,stages=3,warps=16,split_k=4' --samples 3 > $R/ncu_r64.log 2>&1; echo "rc=$?" >> $R/ncu_r64.log
[ $(left) -gt 30 ] && timeout $(( $(left) - 10 )) $NCU $H --backend cuda bench --op qmm.affine --shape rows=16,n=28672,k=4096,bits=4,group=64 --tactic 'qmm.affine.mma:tile_m=16,tile_n=64,tile_k=256,stages=3,warps=16,split_k=1' --samples 3 > $R/ncu_r16.log 2>&1; echo "rc=$?" >> $R/ncu_r16.log
echo "total $(( $(date +%s) - T0 )) s" >> $R/test.log
pack

#!/usr/bin/env bash
# Call 2: call 1 again after the parameter ring (scales and biases STAGES - 1 blocks ahead). Its device tests (every compiled config against the
# float64 reference, leftovers), then per Llama-3.1-8B int4 g64 linear shape and row count a
# qmm.affine tune (every candidate, CUTLASS and mma, timed) and op_matrix on the same cells:
# default, the tune's pick and cuBLASLt BF16 dense, one process.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 580 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache; H=build/tools/hone/hone
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cuobjdump --dump-resource-usage build/tests/device/qmm_affine_op_test 2>&1 | grep -A1 qmm_affine_mma_kernel > $R/mma_resources.txt
export HONE_CACHE_DIR=$R/cache
timeout 120 build/tests/device/qmm_affine_op_test --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$?" >> $R/test.log
H=build/tools/hone/hone
timeout 100 ncu --kernel-name regex:qmm_affine_mma --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy $H --backend cuda bench --op qmm.affine --shape rows=16,n=28672,k=4096,bits=4,group=64 --tactic 'qmm.affine.mma:tile_m=16,tile_n=128,stages=5,warps=4,split_k=2' --samples 5 > $R/ncu.log 2>&1; echo "rc=$?" >> $R/ncu.log
cuobjdump -sass build/tests/device/qmm_affine_op_test 2>/dev/null | awk '/Function : .*qmm_affine_mma_kernelILi2ELi2ELi4ELi5E/{f=1} f&&/Function : /&&!/ILi2ELi2ELi4ELi5E/{f=0} f' > $R/sass_2_2_4_5.txt
: > $R/shapes.txt
for nk in "n=4096,k=4096" "n=4096,k=14336" "n=6144,k=4096" "n=28672,k=4096"; do
  for r in 16 64 32; do
    [ $(left) -lt 150 ] && break 2
    timeout 60 $H --backend cuda tune --op qmm.affine --shape "rows=$r,$nk,bits=4,group=64" --json $R/tune_${nk//[=,]/_}_r$r.json >> $R/tune.log 2>&1; echo "rc=$? rows=$r $nk" >> $R/tune.log
    echo "quick: rows=$r, ${nk/,/, }, bits=4, group=64" >> $R/shapes.txt
  done
done
timeout $(( $(left) - 10 )) build/bench/op_matrix --op qmm.affine --shapes $R/shapes.txt --set quick --samples 7 --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1; echo "rc=$?" >> $R/qmm_matrix.log
cd $OUT && tar czf results.tar.gz r && rm -rf r

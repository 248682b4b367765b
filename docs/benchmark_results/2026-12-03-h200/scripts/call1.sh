#!/usr/bin/env bash
# Call 1: the mma path of qmm.affine. Its device tests (every compiled config against the
# float64 reference, leftovers), then per Llama-3.1-8B int4 g64 linear shape and row count a
# qmm.affine tune (every candidate, CUTLASS and mma, timed) and op_matrix on the same cells:
# default, the tune's pick and cuBLASLt BF16 dense, one process.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 580 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cuobjdump --dump-resource-usage build/tests/device/qmm_affine_op_test 2>&1 | grep -A1 qmm_affine_mma_kernel > $R/mma_resources.txt
export HONE_CACHE_DIR=$R/cache
timeout 120 build/tests/device/qmm_affine_op_test --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$?" >> $R/test.log
H=build/tools/hone/hone
: > $R/shapes.txt
for nk in "n=4096,k=4096" "n=4096,k=14336" "n=6144,k=4096" "n=28672,k=4096"; do
  for r in 64 32 16 128 24 256; do
    [ $(left) -lt 150 ] && break 2
    timeout 60 $H --backend cuda tune --op qmm.affine --shape "rows=$r,$nk,bits=4,group=64" --json $R/tune_${nk//[=,]/_}_r$r.json >> $R/tune.log 2>&1; echo "rc=$? rows=$r $nk" >> $R/tune.log
    echo "quick: rows=$r, ${nk/,/, }, bits=4, group=64" >> $R/shapes.txt
  done
done
timeout $(( $(left) - 10 )) build/bench/op_matrix --op qmm.affine --shapes $R/shapes.txt --set quick --samples 7 --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1; echo "rc=$?" >> $R/qmm_matrix.log
cd $OUT && tar czf results.tar.gz r && rm -rf r

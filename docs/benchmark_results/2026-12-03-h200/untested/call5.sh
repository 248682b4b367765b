#!/usr/bin/env bash
# Call 5 (the session's last device minutes): the mma path with 64- and 128-deep K blocks and
# the narrowed candidate set. Device tests (every compiled config against the float64
# reference, leftovers), compute-sanitizer memcheck and racecheck on the leftover test (reduced
# shapes), then per Llama-3.1-8B int4 g64 shape at 16, 32 and 64 rows a qmm.affine tune and
# op_matrix on the same cells (default, pick, cuBLASLt BF16 dense in one process) as far as the
# time goes. Writes straight into $OUT, so what finished comes back if the call
# is cut.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 150 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT; mkdir -p $R/cache; H=build/tools/hone/hone
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cuobjdump --dump-resource-usage build/tests/device/qmm_affine_op_test 2>&1 | grep -A1 qmm_affine_mma_kernel > $R/mma_resources.txt
export HONE_CACHE_DIR=$R/cache
T=build/tests/device/qmm_affine_op_test
timeout 70 $T --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$?" >> $R/test.log
for tool in memcheck racecheck; do
  HONE_DEVICE_TEST_REDUCED=1 timeout 25 compute-sanitizer --tool $tool --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_$tool.log 2>&1; echo "rc=$?" >> $R/sanitizer_$tool.log
done
: > $R/shapes.txt
for nk in "n=4096,k=4096" "n=28672,k=4096" "n=4096,k=14336"; do
  for r in 16 32 64; do
    [ $(left) -lt 30 ] && break 2
    timeout 40 $H --backend cuda tune --op qmm.affine --shape "rows=$r,$nk,bits=4,group=64" --json $R/tune_${nk//[=,]/_}_r$r.json >> $R/tune.log 2>&1; echo "rc=$? rows=$r $nk" >> $R/tune.log
    echo "quick: rows=$r, ${nk/,/, }, bits=4, group=64" >> $R/shapes.txt
  done
done
timeout $(( $(left) - 3 )) build/bench/op_matrix --op qmm.affine --shapes $R/shapes.txt --set quick --samples 7 --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1; echo "rc=$?" >> $R/qmm_matrix.log

#!/usr/bin/env bash
# Call 2: the mma path with six more kernels (two or four m16 tiles per warp at 32 and 64 activation
# rows, 128-row tiles for 65-128 rows; kMmaMaxRows 128): registers and spills of every mma kernel,
# the device tests (every compiled config against float64, the leftover test), memcheck and
# racecheck of the leftover test, and op_matrix on qmm.affine at rows 24-128 of the four
# Llama-3.1-8B shapes (int4 g64; each bucket tuned in the process; cuBLASLt BF16 dense beside).
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 570 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache; T=build/tests/device/qmm_affine_op_test
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cuobjdump --dump-resource-usage $T 2>&1 | grep -A1 qmm_affine_mma_kernel > $R/mma_resources.txt
export HONE_CACHE_DIR=$R/cache
timeout 200 $T --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test.log
timeout 60 build/tests/device/quantized_linear_op_test > $R/test_linear.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test_linear.log
pack
: > $R/shapes.txt
for nk in "n=4096, k=4096" "n=28672, k=4096" "n=4096, k=14336" "n=6144, k=4096"; do
  echo "quick: rows=24|32|48|64|96|128, $nk, bits=4, group=64" >> $R/shapes.txt
done
timeout $(( $(left) - 150 )) build/bench/op_matrix --op qmm.affine --shapes $R/shapes.txt --set quick --samples 7 --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/qmm_matrix.log
pack
HONE_DEVICE_TEST_REDUCED=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_memcheck.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_memcheck.log
HONE_DEVICE_TEST_REDUCED=1 timeout $(( $(left) - 5 )) compute-sanitizer --tool racecheck --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_racecheck.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_racecheck.log
cd $OUT && tail -n 3 r/test.log r/test_linear.log r/sanitizer_*.log; grep -E '^\| rows|geomean' r/qmm_matrix.log | cut -c1-220
pack

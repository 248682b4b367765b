#!/usr/bin/env bash
# Call 1: quantized_linear's matrix (bench/shapes/quantized_linear.txt, set full: every M 1-128 on
# (4096, 14336) and (28672, 4096), 129-256 sampled, the other two Llama-3.1-8B shapes at the
# bucket points) with the cache of the model tune of 2026-12-03-h200-3 (its qmv.affine and
# qmm.affine picks are the two sides), qmv-only and qmm-only beside it, cuBLASLt BF16 dense as the
# peer; the no-cliff chart and checks; then racecheck on the mma path's leftover test.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s)
left() { echo $(( 575 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cp docs/benchmark_results/2026-12-03-h200-3/call1/cache/tuning-cache.json $R/cache/
export HONE_CACHE_DIR=$R/cache
ts=$(date +%s)
timeout $(( $(left) - 150 )) build/bench/op_matrix --op quantized_linear --set full --samples 7 \
  --also quantized_linear.qmv --also quantized_linear.qmm \
  --json $R/quantized_linear_matrix.json > $R/quantized_linear_matrix.log 2>&1
echo "op_matrix rc=$? wall $(( $(date +%s) - ts )) s" >> $R/quantized_linear_matrix.log
python3 scripts/plot_crossover.py --linear $R/quantized_linear_matrix.json --png $R/crossover.png \
  > $R/checks.log 2>&1; echo "plot rc=$?" >> $R/checks.log
ts=$(date +%s)
HONE_DEVICE_TEST_REDUCED=1 timeout $(( $(left) - 10 )) compute-sanitizer --tool racecheck \
  build/tests/device/qmm_affine_op_test --gtest_filter='*MmaPathHandlesLeftovers*' \
  > $R/sanitizer_racecheck.log 2>&1
echo "racecheck rc=$? wall $(( $(date +%s) - ts )) s" >> $R/sanitizer_racecheck.log
cd $OUT && tail -n 40 r/checks.log; tail -n 5 r/quantized_linear_matrix.log r/sanitizer_racecheck.log
tar czf results.tar.gz r && rm -rf r

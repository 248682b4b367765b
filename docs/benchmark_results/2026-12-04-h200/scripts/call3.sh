#!/usr/bin/env bash
# Call 3: call 1's quantized_linear matrix again, with op_matrix's samples in
# hone::interleaved_order (every subject after every other equally often; at least 7 samples,
# whole circuits: 9 with four subjects) instead of the cyclic round, same build and cache: the
# default and the quantized_linear.qmv extra are the same kernel and must now agree. Then the
# prefill acceptance cells of qmm.affine (bench/shapes/qmm.affine.txt, set full), same order.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 570 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cp docs/benchmark_results/2026-12-03-h200-3/call1/cache/tuning-cache.json $R/cache/
export HONE_CACHE_DIR=$R/cache
timeout 290 build/bench/op_matrix --op quantized_linear --set full --samples 7 \
  --also quantized_linear.qmv --also quantized_linear.qmm \
  --json $R/quantized_linear_matrix.json > $R/quantized_linear_matrix.log 2>&1
echo "op_matrix rc=$? $(( $(date +%s) - T0 )) s" >> $R/quantized_linear_matrix.log
python3 scripts/plot_crossover.py --linear $R/quantized_linear_matrix.json --png $R/crossover.png \
  > $R/checks.log 2>&1; echo "plot rc=$?" >> $R/checks.log
pack
timeout $(( $(left) - 15 )) build/bench/op_matrix --op qmm.affine --set full --samples 7 \
  --json $R/qmm_matrix.json > $R/qmm_matrix.log 2>&1
echo "op_matrix rc=$? $(( $(date +%s) - T0 )) s" >> $R/qmm_matrix.log
python3 scripts/plot_crossover.py --linear $R/quantized_linear_matrix.json --qmm $R/qmm_matrix.json \
  > $R/checks_prefill.log 2>&1; echo "plot rc=$?" >> $R/checks_prefill.log
cd $OUT && cat r/checks_prefill.log | tail -25; tail -n 3 r/quantized_linear_matrix.log r/qmm_matrix.log
pack

#!/usr/bin/env bash
# Call 4: what ran before a sample, same build and cache as call 3. op_matrix on quantized_linear
# at M 1-16, 24, 32, 64 of (4096, 14336) and (28672, 4096), the qmv and qmm extras beside the
# default, samples in hone::interleaved_order; without and with --flush-every-sample (the LLC
# flush, a 2 x LLC write into a buffer of its own, before every sample of every subject), twice
# each, alternating, one process per run.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s)
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
cp docs/benchmark_results/2026-12-03-h200-3/call1/cache/tuning-cache.json $R/cache/
export HONE_CACHE_DIR=$R/cache
printf '%s\n' 'quick: rows=1..16|24|32|64, n=28672, k=4096, bits=4, group=64' \
  'quick: rows=1..16|24|32|64, n=4096, k=14336, bits=4, group=64' > $R/shapes.txt
for run in plain_1 flush_1 plain_2 flush_2; do
  extra=(); [[ $run == flush* ]] && extra=(--flush-every-sample)
  timeout 120 build/bench/op_matrix --op quantized_linear --shapes $R/shapes.txt --set quick --samples 7 \
    --also quantized_linear.qmv --also quantized_linear.qmm "${extra[@]}" \
    --json $R/$run.json > $R/$run.log 2>&1
  echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/$run.log
done
cd $OUT && tail -n 2 r/*.log
tar czf results.tar.gz r

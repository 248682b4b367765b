#!/usr/bin/env bash
# Call 5: how cold a 2 x LLC rotation is. Call 4's points, samples in hone::interleaved_order,
# the subjects timed over input copies spanning 2 x (the tuner's), 8 x and 8 x LLC with the flush
# before every sample, then 2 x again; one process per run (the tunes keep their 2 x).
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
for run in rot2_1 rot8 rot8_flush rot2_2; do
  extra=(); [[ $run == rot8* ]] && extra=(--rotate-llc 8); [[ $run == *flush ]] && extra+=(--flush-every-sample)
  timeout 120 build/bench/op_matrix --op quantized_linear --shapes $R/shapes.txt --set quick --samples 7 \
    --also quantized_linear.qmv --also quantized_linear.qmm "${extra[@]}" \
    --json $R/$run.json > $R/$run.log 2>&1
  echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/$run.log
done
cd $OUT && tail -n 2 r/*.log
tar czf results.tar.gz r

#!/usr/bin/env bash
# Call 2: the full Llama-3.1-8B model tune under the default budget, timed to the end; cache
# verify; then, in the time left, the int4 and bf16 batch-1 steps with that cache.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R
export HONE_CACHE_DIR=$R/cacheA
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
$H tune --model models/llama-3.1-8b.json --dry-run > $R/tune_dry.log 2>&1
ts=$(date +%s); timeout $(( $(left) - 15 )) $H tune --model models/llama-3.1-8b.json > $R/tune.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tune.log
$H cache verify > $R/cache_verify.log 2>&1; echo "verify rc=$?" >> $R/cache_verify.log
L=$(left); echo "left after tune: $L s" >> $R/tune.log
if [ $L -gt 70 ]; then
  timeout $(( L - 10 )) $H step --model models/llama-3.1-8b.json --batch 1 --context 4k --quant int4:g64 --samples 9 --json $R/step_b1_int4_g64.json > $R/step.log 2>&1
fi
L=$(left)
if [ $L -gt 70 ]; then
  timeout $(( L - 5 )) $H step --model models/llama-3.1-8b.json --batch 1 --context 4k --samples 7 --json $R/step_b1_bf16.json >> $R/step.log 2>&1
fi
cd $OUT && tar czf results.tar.gz r && rm -rf r

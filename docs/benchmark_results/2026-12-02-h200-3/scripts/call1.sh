#!/usr/bin/env bash
# Call 1: the step's loads-only ceiling (bench/step_ceiling); a full Llama-3.1-8B model tune with the runoff (cache E), default 9-minute budget,
# timed to its end; cache verify; then the bf16 prefill of 512 tokens with that cache.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R/cacheE
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
git log -1 --format=%H > $R/tree.txt 2>/dev/null || true
timeout 60 build/bench/step_ceiling --model models/llama-3.1-8b.json --quant bf16,int4:g64 --batch 1 --context 4k --json $R/step_ceiling_llama.json > $R/step_ceiling.log 2>&1; echo "rc=$?" >> $R/step_ceiling.log
timeout 30 build/bench/step_ceiling --model models/qwen2.5-1.5b.json --quant bf16 --batch 1 --context 4k --json $R/step_ceiling_qwen.json >> $R/step_ceiling.log 2>&1; echo "rc=$?" >> $R/step_ceiling.log
export HONE_CACHE_DIR=$R/cacheE
$H tune --model models/llama-3.1-8b.json --dry-run > $R/tune_dry.log 2>&1
ts=$(date +%s); timeout $(( $(left) - 10 )) $H tune --model models/llama-3.1-8b.json --json $R/tuneE.json > $R/tuneE.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tuneE.log
$H cache verify > $R/cacheE_verify.log 2>&1; echo "verify rc=$?" >> $R/cacheE_verify.log
L=$(left); echo "left after tune: $L s" >> $R/tuneE.log
if [ $L -gt 60 ]; then
  timeout $(( L - 5 )) $H step --model models/llama-3.1-8b.json --batch 1 --context 0 --prefill 512 --samples 7 --check-replays 1000 --no-breakdown --json $R/prefill_bf16.json > $R/prefill.log 2>&1; echo "rc=$?" >> $R/prefill.log
fi
cd $OUT && tar czf results.tar.gz r && rm -rf r

#!/usr/bin/env bash
# Call 3: the PyTorch peer and the
# Llama-3.1-8B batch-1 steps (int4 g64, bf16) with call 1's cache E, same call; then a
# Qwen2.5-1.5B model tune (cache Q) and its steps at batch 1, 4, 16 and the prefill of 512
# tokens with that cache, in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R/cacheQ
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
timeout 90 python3 bench/peers/decode_step_torch.py --model models/llama-3.1-8b.json --batch 1 --context 4k --json $R/peer_llama_b1.json --md $R/peer_llama_b1.md > $R/peer.log 2>&1; echo "rc=$?" >> $R/peer.log
export HONE_CACHE_DIR=$PWD/.carry/cacheE
for q in int4:g64 bf16; do
  timeout 60 $H step --model models/llama-3.1-8b.json --batch 1 --context 4k --quant $q --samples 9 --check-replays 1000 --no-breakdown --json $R/step_llama_b1_${q%%:*}.json >> $R/step_llama.log 2>&1; echo "rc=$?" >> $R/step_llama.log
done
export HONE_CACHE_DIR=$R/cacheQ
$H tune --model models/qwen2.5-1.5b.json --dry-run > $R/tuneQ_dry.log 2>&1
ts=$(date +%s); timeout $(( $(left) - 90 )) $H tune --model models/qwen2.5-1.5b.json > $R/tuneQ.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tuneQ.log
$H cache verify > $R/cacheQ_verify.log 2>&1; echo "verify rc=$?" >> $R/cacheQ_verify.log
for cell in "1 0" "4 0" "16 0" "1 512"; do
  set -- $cell; L=$(left); [ $L -lt 25 ] && break
  ctx=4k; [ $2 -gt 0 ] && ctx=0
  timeout $(( L - 5 )) $H step --model models/qwen2.5-1.5b.json --batch $1 --context $ctx --prefill $2 --samples 7 --check-replays 1000 --no-breakdown --json $R/step_qwen_b$1_p$2.json >> $R/step_qwen.log 2>&1; echo "rc=$?" >> $R/step_qwen.log
done
cd $OUT && tar czf results.tar.gz r && rm -rf r

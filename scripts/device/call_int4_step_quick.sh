#!/usr/bin/env bash
# One short call (~2 min): the Llama-3.1-8B int4 g64 decode step at batch 1, context 4k, with
# the model's four layer linears tuned at one row in tolerance mode (a 60 s budget; the lm_head
# and the other ops at their defaults), against the PyTorch bf16 peer of the same step, for a
# device with little time left. step_tolerance.sh is the whole measurement.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_int4_step_quick.sh OUT
set -u
OUT=$1
W=$OUT/int4_step
mkdir -p "$W/cache"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
H=build/tools/hone/hone
MODEL=models/llama-3.1-8b.json
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
timeout 60 python3 bench/peers/decode_step_torch.py --model "$MODEL" --batch 1 --context 4k \
  --json "$W/peer.json" --md "$W/peer.md" >"$W/peer.log" 2>&1
echo "peer rc=$?"
grep -E '^\| llama' "$W/peer.md"
HONE_CACHE_DIR=$W/cache timeout 90 "$H" tune --model "$MODEL" --rows 1 --ops qmv.affine --bits 4 \
  --group 64 --numerics tolerance --budget 60s --json "$W/tune.json" >"$W/tune.log" 2>&1
echo "tune rc=$?"
grep -E '^qmv.affine' "$W/tune.log" | cut -c1-60,140-260
HONE_CACHE_DIR=$W/cache timeout 100 "$H" step --model "$MODEL" --batch 1 --context 4k \
  --quant int4:g64 --samples 9 --json "$W/step.json" >"$W/step.log" 2>&1
echo "step rc=$?"
sed -n '/| variant/,/^$/p' "$W/step.log"
tar czf "$OUT/int4_step.tar.gz" -C "$OUT" int4_step && rm -rf "$W"

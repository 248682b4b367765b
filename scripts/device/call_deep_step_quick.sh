#!/usr/bin/env bash
# The short form of call_deep_step.sh (~2 min) for a device with little time left: the
# qmv.affine kernel and op tests on reduced shapes, the PyTorch bf16 peer, then the
# Llama-3.1-8B int4 g64 decode step at batch 1, context 4k, with BASE_HONE and this build's
# `hone` in turn, two rounds, each with an empty cache (default, default + PDL checked over 1000
# replays).
#
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/base.tar.xz && \
#     scripts/device/call_deep_step_quick.sh OUT ./base_hone
set -u
OUT=${1:?OUTDIR}
base_hone=${2:?BASE hone}
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
W=$OUT/deep_step
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout 60 "build/tests/device/$t" >"$W/test_$t.log" 2>&1
  echo "$t rc=$?"
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$W/test_$t.log" | head -4
done
M=models/llama-3.1-8b.json
timeout 60 python3 bench/peers/decode_step_torch.py --model "$M" --batch 1 --context 4k \
  --json "$W/peer.json" --md "$W/peer.md" >"$W/peer.log" 2>&1
echo "peer rc=$?"
grep -E '^\| llama' "$W/peer.md"
for round in 1 2; do
  for build in base new; do
    h=build/tools/hone/hone
    [ "$build" = base ] && h=$base_hone
    mkdir -p "$W/cache_${build}_$round"
    HONE_CACHE_DIR=$W/cache_${build}_$round timeout 60 "$h" step --model "$M" --batch 1 \
      --context 4k --quant int4:g64 --samples 9 --no-breakdown --json "$W/step_${build}_$round.json" \
      >"$W/step_${build}_$round.log" 2>&1
    echo "step $build $round rc=$?"
    grep -E '^\| default' "$W/step_${build}_$round.log"
  done
  tar czf "$OUT/deep_step.tar.gz" -C "$OUT" deep_step
done

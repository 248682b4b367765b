#!/usr/bin/env bash
# One call (~5 min, either card): the deep register pipeline of the staged J 2 kernel
# (kQmvMmaDeep with its slice floor) against the build before it. The qmv.affine tests and the
# defaults A/B (call_defaults_ab.sh: this build's harness against BASE_HARNESS, rows 1-8, two
# rounds), then the PyTorch bf16 peer and the Llama-3.1-8B int4 g64 decode step at batch 1,
# context 4k, with BASE_HONE and this build's `hone` in turn, two rounds, each with an empty
# cache (default, default + PDL checked over 1000 replays).
#
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/base.tar.xz && \
#     scripts/device/call_deep_step.sh OUT ./base_harness ./base_hone
set -u
OUT=${1:?OUTDIR}
base_harness=${2:?BASE harness}
base_hone=${3:?BASE hone}
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
ROWS=${ROWS:-1,2,4,8} AB_BUDGET=${AB_BUDGET:-200} bash scripts/device/call_defaults_ab.sh "$OUT" \
  "$base_harness"
W=$OUT/deep_step
mkdir -p "$W"
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
    HONE_CACHE_DIR=$W/cache_${build}_$round timeout 100 "$h" step --model "$M" --batch 1 \
      --context 4k --quant int4:g64 --samples 9 --no-breakdown --json "$W/step_${build}_$round.json" \
      >"$W/step_${build}_$round.log" 2>&1
    echo "step $build $round rc=$?"
    grep -E '^\| default' "$W/step_${build}_$round.log"
  done
done
tar czf "$OUT/deep_step.tar.gz" -C "$OUT" deep_step && rm -rf "$W"

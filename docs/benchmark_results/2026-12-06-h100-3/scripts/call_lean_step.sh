#!/usr/bin/env bash
# One call (~3 min, either device): issue 14's int4 g64 step on the leaner qmv.affine loop, with
# the four layer linears tuned at one row in tolerance mode by this build, then that cache's
# step by this build and by the build before the loop (`ab/prev_hone` of `.carry/ab.tar.xz`),
# in turn, twice, and the PyTorch bf16 peer. Everything lands in OUT/lean_step.tar.gz.
#
#   scripts/device/call_lean_step.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x ab/prev_hone ] || { tar xJf .carry/ab.tar.xz && chmod +x ab/*; }
run_begin lean_step "${BUDGET:-400}" "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
MODEL=models/llama-3.1-8b.json

timeout "$(cap 60)" python3 bench/peers/decode_step_torch.py --model "$MODEL" --batch 1 \
  --context 4k --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
stamp "peer (PyTorch, bf16)" $?
grep -E '^\| llama' "$R/peer.md"

cache=$R/cache_int4_g64
mkdir -p "$cache"
HONE_CACHE_DIR=$cache timeout "$(cap 120)" "$H" tune --model "$MODEL" --rows 1 --ops qmv.affine \
  --bits 4 --group 64 --numerics tolerance --budget 90s --json "$R/tune_int4_g64.json" \
  >"$R/tune_int4_g64.log" 2>&1
stamp "tune int4 g64 (tolerance, four layer linears)" $?
grep -E '^qmv' "$R/tune_int4_g64.log" | cut -c1-250
pack

for round in 1 2; do
  for which in lean prev; do
    [ "$(left)" -lt 30 ] && break 2
    bin=$H
    [ $which = prev ] && bin=ab/prev_hone
    tag=step_${which}_$round
    HONE_CACHE_DIR=$cache timeout "$(cap 45)" "$bin" step --model "$MODEL" --batch 1 \
      --context 4k --quant int4:g64 --samples 9 --json "$R/$tag.json" >"$R/$tag.log" 2>&1
    stamp "$tag" $?
    grep -E '^\| (default|tuned)' "$R/$tag.log" | sed "s/^/$tag /" | cut -c1-110
  done
done
pack

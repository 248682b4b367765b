#!/usr/bin/env bash
# For a session with little device time left (~4 min): on an H200 only, issue 14's int4 g64 decode
# step at batch 1 against the PyTorch bf16 peer (call_int4_step_quick.sh); on another card it
# exits at once.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_h200_int4_step.sh OUT
set -u
OUT=${1:?OUTDIR}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
grep -q H200 "$OUT/gpu.txt" || { echo "not an H200: nothing run"; exit 0; }
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
bash scripts/device/call_int4_step_quick.sh "$OUT"

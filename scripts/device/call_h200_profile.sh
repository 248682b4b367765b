#!/usr/bin/env bash
# One H200 call (~7 min), after call_h200_step.sh: Nsight Compute of the int4 gate_up pick of the
# step's tolerance tune (profile.sh's step `pick`), then the vendor point's part 2 of 2
# (decode_matrix.sh gemv.bf16 tolerance).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_h200_profile.sh OUT
set -u
OUT=$1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
BUILD=build scripts/device/profile.sh "$OUT" pick
echo "profile rc=$?"
RUN_BUDGET_S=${RUN_BUDGET_S:-420} scripts/device/decode_matrix.sh "$OUT" build gemv.bf16 2 2 \
  tolerance >"$OUT/decode_matrix.out" 2>&1
echo "decode_matrix rc=$?"
tail -n 12 "$OUT/decode_matrix.out"

#!/usr/bin/env bash
# The first call of the next session (device_plan.md), by the card it lands on:
# - on an H200 (~8 min): call_deep_step_quick.sh (the qmv.affine tests, the PyTorch peer and the
#   int4 g64 batch-1 step with the build before the staged deep loop and with this one, two
#   rounds), then step_tolerance.sh (both issue-14 step bars on this build, tuned);
# - elsewhere (~5 min): call_deep_step.sh (the same tests, the defaults A/B against the build
#   before at rows 1-8, the same steps).
#
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/base.tar.xz && scripts/device/call_next.sh OUT
set -u
OUT=${1:?OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
[ -x base_hone ] || tar xJf .carry/base.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/card.txt"
if grep -q H200 "$OUT/card.txt"; then
  bash scripts/device/call_deep_step_quick.sh "$OUT" ./base_hone
  bash scripts/device/step_tolerance.sh "$OUT" build >"$OUT/step_tolerance.out" 2>&1
  echo "step_tolerance rc=$?"
  grep -E '^\| (llama|default|tuned)' "$OUT/step_tolerance.out"
else
  bash scripts/device/call_deep_step.sh "$OUT" ./base_harness ./base_hone
fi

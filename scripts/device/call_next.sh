#!/usr/bin/env bash
# The first call of the next session (device_plan.md), by the card it lands on:
# - on an H200 (~8 min): call_deep_step.sh with QUICK=1 (the variant's kernel and op tests, the
#   PyTorch peer and the int4 g64 batch-1 step with this build and the variant, two rounds), then
#   step_tolerance.sh (both issue-14 step bars on this build, tuned);
# - elsewhere (~5 min): call_deep_step.sh (the defaults A/B with the variant at rows 1-8 too).
#
#   scripts/device/pack_var.sh src/cuda/kernels/qmv_affine/qmv_affine.cuh kQmvMmaDeep  # here
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/var.tar.xz && scripts/device/call_next.sh OUT
set -u
OUT=${1:?OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
[ -x var_hone ] || tar xJf .carry/var.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/card.txt"
if grep -q H200 "$OUT/card.txt"; then
  QUICK=1 bash scripts/device/call_deep_step.sh "$OUT"
  bash scripts/device/step_tolerance.sh "$OUT" build >"$OUT/step_tolerance.out" 2>&1
  echo "step_tolerance rc=$?"
  grep -E '^\| (llama|default|tuned)' "$OUT/step_tolerance.out"
else
  bash scripts/device/call_deep_step.sh "$OUT"
fi

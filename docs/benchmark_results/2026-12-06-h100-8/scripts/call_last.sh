#!/usr/bin/env bash
# A short last call of a device session (~4-7 min): on an H200, issue 14's int4 g64 decode step at
# batch 1 against the PyTorch bf16 peer (call_int4_step_quick.sh), then the qmv.affine cold table
# (call_cold_table.sh); on another card, issue 11's quantized_linear table (quantized_linear.sh)
# within LAST_BUDGET seconds.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_last.sh OUT
set -u
OUT=${1:?OUTDIR}
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
budget=${LAST_BUDGET:-400}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  timeout 230 bash scripts/device/call_int4_step_quick.sh "$OUT"
  echo "int4_step rc=$?"
  timeout 150 bash scripts/device/call_cold_table.sh "$OUT" build >"$OUT/cold_table.out" 2>&1
  echo "cold_table rc=$?"
  tail -n 30 "$OUT/cold_table.out"
else
  QL_BUDGET=$((budget - 20)) timeout "$budget" bash scripts/device/quantized_linear.sh "$OUT" build \
    >"$OUT/ql.out" 2>&1
  echo "quantized_linear rc=$?"
  tail -n 45 "$OUT/ql.out"
fi

#!/usr/bin/env bash
# One short call (~4 min, either card): the device-side gate counts (ba45ddd) and rmsnorm's
# few-rows default (3ce672d).
# - gate_counts_test, rmsnorm_op_test, silu_mul_op_test (reduced shapes) and rmsnorm_row_test
#   (a CTA of 32-256 threads normalising a row with rmsnorm's bits).
# - Two tunes of Qwen2.5-1.5B's rmsnorm buckets alone (two_tunes.sh with TUNE_ARGS), each into
#   an empty cache, compared: the two keys that differed by 2.1 % (2026-12-07-2).
# - A whole Qwen2.5-1.5B tune (C) in what is left: its wall time and gate time beside the
#   272 s and 184 s before the device-side gate (cut by the budget if it must be).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_gate_rmsnorm.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin gate_rmsnorm "${BUDGET:-260}" "${1:?OUTDIR}" build
H=$BUILD/tools/hone/hone
M=${MODEL:-models/qwen2.5-1.5b.json}
unset HONE_CACHE HONE_AUTOTUNE
cat "$R/gpu.txt"
device_tests gate_counts_test rmsnorm_op_test silu_mul_op_test rmsnorm_row_test
pack
# Two tunes of the rmsnorm buckets and their comparison: two_tunes.sh, into $1/two_tunes.
TUNE_ARGS="--ops rmsnorm" TUNE_CAP=60 TT_BUDGET=$(cap 110) MODEL=$M \
  bash "$(dirname "$0")/two_tunes.sh" "$OUTDIR" "$BUILD"
stamp "two rmsnorm tunes compared (two_tunes/)" $?
mkdir -p "$R/C"
HONE_CACHE_DIR=$R/C timeout "$(cap 300)" "$H" --backend cuda tune --model "$M" \
  --json "$R/tune_C.json" >"$R/tune_C.log" 2>&1
stamp "tune C (whole model, to the budget)" $?
tail -n 2 "$R/tune_C.log"
grep -E '^\[[0-9]+/' "$R/tune_C.log" | tail -n 1 | cut -c1-120
xz -T4 -f "$R/tune_C.json" 2>/dev/null
pack

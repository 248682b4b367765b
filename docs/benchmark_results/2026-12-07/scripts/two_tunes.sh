#!/usr/bin/env bash
# Issue 14's "two tunes of the same model agree" (~8-9 min on an H100 for Qwen2.5-1.5B): two full
# `hone tune --model MODEL` runs in turn, each into its own empty cache (A, then B), with the
# tune's own JSON report and wall time. scripts/compare_tunes.py then times the keys whose picks
# differ head to head in what is left of the budget (a key it does not reach is listed as not
# compared; a second call over the two caches this one returns compares the rest).
#
#   tar xJf .carry/bin.tar.xz && MODEL=models/qwen2.5-1.5b.json scripts/device/two_tunes.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin two_tunes "${TT_BUDGET:-580}" "${1:?OUTDIR}" "${2:-build}"
H=$BUILD/tools/hone/hone
model=${MODEL:-models/qwen2.5-1.5b.json}
unset HONE_CACHE HONE_AUTOTUNE
for run in A B; do
  mkdir -p "$R/$run"
  [ "$(left)" -lt 60 ] && break
  ts=$(date +%s)
  HONE_CACHE_DIR=$R/$run timeout "$(cap 290)" "$H" --backend cuda tune --model "$model" \
    --json "$R/tune_$run.json" >"$R/tune_$run.log" 2>&1
  stamp "tune $run ($(($(date +%s) - ts)) s)" $?
  tail -n 3 "$R/tune_$run.log"
  xz -T4 -f "$R/tune_$run.json"
  pack
done
if [ -f "$R/A/tuning-cache.json" ] && [ -f "$R/B/tuning-cache.json" ] && [ "$(left)" -ge 45 ]; then
  python3 scripts/compare_tunes.py "$R/A/tuning-cache.json" "$R/B/tuning-cache.json" --hone "$H" \
    --md "$R/compare.md" --json "$R/compare.json" --budget $(($(left) - 30)) --recheck-samples 15 \
    >"$R/compare.log" 2>&1
  stamp "compare_tunes" $?
  tail -n 4 "$R/compare.log"
  pack
fi

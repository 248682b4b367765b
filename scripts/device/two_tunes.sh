#!/usr/bin/env bash
# Issue 14's "two tunes of the same model agree": full `hone tune --model MODEL` runs, each into
# its own empty cache (A, then B), with the tune's own JSON report and wall time.
# scripts/compare_tunes.py then times the keys whose picks differ head to head in what is left
# of the budget (a key it does not reach is listed as not compared).
# A whole Qwen2.5-1.5B tune took 272-274 s on an H100 (docs/benchmark_results/2026-12-07-2),
# so two and the comparison may not fit one 600 s call. RUNS=A runs the first alone (up to
# 540 s); a second call with RUNS=B and PRIOR=DIR (a folder holding A/tuning-cache.json, as the
# first call returned it, carried in the tree) runs the second and compares the two.
# A run named in RUNS whose cache PRIOR holds resumes from it (a tune cut at its cap: RUNS=A
# PRIOR=tunes tunes what A had not reached, then compares with PRIOR's B).
# TUNE_ARGS: more `hone tune` arguments for both tunes (`--ops rmsnorm`: one op's buckets).
#
#   tar xJf .carry/bin.tar.xz && RUNS=A MODEL=models/qwen2.5-1.5b.json scripts/device/two_tunes.sh OUT
#   tar xJf .carry/bin.tar.xz && RUNS=B PRIOR=tunes MODEL=... scripts/device/two_tunes.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin two_tunes "${TT_BUDGET:-580}" "${1:?OUTDIR}" "${2:-build}"
H=$BUILD/tools/hone/hone
model=${MODEL:-models/qwen2.5-1.5b.json}
unset HONE_CACHE HONE_AUTOTUNE
runs=${RUNS:-A B}
set -- $runs
each=${TUNE_CAP:-$(($# == 1 ? 540 : 290))}
for run in $runs; do
  mkdir -p "$R/$run"
  [ "$(left)" -lt 60 ] && break
  # A tune cut at its cap resumes from its own cache (PRIOR/<run>/tuning-cache.json): only what
  # it had not reached is tuned (docs/benchmark_results/2026-12-07-4 call7).
  if [ -n "${PRIOR:-}" ] && [ -f "$PRIOR/$run/tuning-cache.json" ]; then
    cp "$PRIOR/$run/tuning-cache.json" "$R/$run/"
  fi
  ts=$(date +%s)
  # shellcheck disable=SC2086 # TUNE_ARGS is a list of arguments
  HONE_CACHE_DIR=$R/$run timeout "$(cap "$each")" "$H" --backend cuda tune --model "$model" \
    ${TUNE_ARGS:-} --json "$R/tune_$run.json" >"$R/tune_$run.log" 2>&1
  rc=$? # before the command substitution below resets $?
  stamp "tune $run ($(($(date +%s) - ts)) s)" $rc
  tail -n 3 "$R/tune_$run.log"
  xz -T4 -f "$R/tune_$run.json"
  pack
done
for run in A B; do # the other tune's cache, from an earlier call
  if [ -n "${PRIOR:-}" ] && [ ! -f "$R/$run/tuning-cache.json" ] &&
    [ -f "$PRIOR/$run/tuning-cache.json" ]; then
    mkdir -p "$R/$run" && cp "$PRIOR/$run/tuning-cache.json" "$R/$run/"
  fi
done
if [ -f "$R/A/tuning-cache.json" ] && [ -f "$R/B/tuning-cache.json" ] && [ "$(left)" -ge 45 ]; then
  python3 scripts/compare_tunes.py "$R/A/tuning-cache.json" "$R/B/tuning-cache.json" --hone "$H" \
    --md "$R/compare.md" --json "$R/compare.json" --budget $(($(left) - 30)) --recheck-samples 15 \
    >"$R/compare.log" 2>&1
  stamp "compare_tunes" $?
  tail -n 4 "$R/compare.log"
  pack
fi

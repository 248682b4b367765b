#!/usr/bin/env bash
# The default's K split (k_slices) per weight shape, measured: the kernel harnesses time every
# config of every cell (--csv, one line per config with the default marked) over the shapes of
# issue 13's matrix (bench/shapes/decode_matrix/) at rows 1, 4, 16 and 32 (HONE_FIT_ROWS), and
# scripts/fit_k_slices.py gives, per shape, the cost of each k_slices of the default's path order
# (geomean over the row counts of its fastest config over the fastest of that order) beside the
# default's. The data to refit default_k_slices from (docs/notes/gemv_bf16.md, "The default's K
# split"). SETS: any of gemv, 4x64, 4x128, 8x64 (default all four, ~1.5-2 minutes each on an
# H100, at ~1.6 s a cell: 15 shapes x 4 row counts);
# each set is capped so that the script ends within one device call and packs what it has.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/k_slices_fit.sh "$OUT" build gemv,4x64
set -u
sets=${3:-gemv,4x64,4x128,8x64}
source "$(dirname "$0")/env.sh"
run_begin k_slices_fit 570 "${1:?OUTDIR}" "${2:-build}"
shapes() {
  grep '^full:' "bench/shapes/decode_matrix/$1.txt" |
    sed -E 's/.*n=([0-9]+), *k=([0-9]+).*/\1x\2/' | sort -u | paste -sd, -
}
rows=${HONE_FIT_ROWS:-1,4,16,32}
# The configs of the mma order only (the ring path shares it): the fit counts no other.
export HONE_TEST_PATHS=${HONE_TEST_PATHS:-mma,ring}
IFS=, read -ra wanted <<<"$sets"
n=${#wanted[@]}
for set in "${wanted[@]}"; do
  # An equal share of the time left for each set still to run.
  share=$(($(left) / n - 10))
  n=$((n - 1))
  [ "$share" -lt 30 ] && { stamp "$set skipped: too little time" 1; continue; }
  if [ "$set" = gemv ]; then
    timeout "$share" "$BUILD/bench/gemv_bf16_harness" --no-check --shapes "$(shapes gemv.bf16)" \
      --rows "$rows" --csv "$R/gemv.csv" >"$R/gemv.log" 2>&1
  else
    timeout "$share" "$BUILD/bench/qmv_affine_harness" --no-check --shapes "$(shapes qmv.affine)" \
      --rows "$rows" --formats "$set" --csv "$R/qmv_$set.csv" >"$R/qmv_$set.log" 2>&1
  fi
  rc=$?
  stamp "$set (cap $share s)" $rc
  csv=$R/$([ "$set" = gemv ] && echo gemv || echo "qmv_$set").csv
  # A run cut by its cap may leave its last cell partial: the fit then leaves that cell out.
  python3 scripts/fit_k_slices.py "$csv" --md "${csv%.csv}_fit.md" \
    $([ "$rc" = 124 ] && echo --drop-last-cell) >/dev/null 2>"${csv%.csv}_fit.err"
  tail -14 "${csv%.csv}_fit.md" 2>/dev/null
  pack
done

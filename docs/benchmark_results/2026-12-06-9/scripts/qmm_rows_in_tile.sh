#!/usr/bin/env bash
# Whether a qmm.affine kernel's time depends on how many of its tile's activation rows are real
# (~2 min, either card). quantized_linear ran M 48 slower than M 64 (17.88 against 15.98 us) and
# M 96 slower than M 128 (24.69 against 21.79) on 4096 x 4096 int4 g64 with the same bucket's pick
# (docs/benchmark_results/2026-12-06-h100-8/call2): 48 and 96 take the buckets of 64 and 128. This
# times each pick at every M of its tile's range in steps (`hone bench`, cold, one JSON a point),
# so that a cost of the zero-filled rows, if there is one, shows as time falling with M.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/qmm_rows_in_tile.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin qmm_rows_in_tile "${RIT_BUDGET:-150}" "${1:?OUTDIR}" "${2:-build}"
H=$BUILD/tools/hone/hone
shape=n=4096,k=4096,bits=4,group=64
# tactic, then the row counts to time it at
specs=(
  "qmm.affine.mma:tile_m=64,tile_n=32,tile_k=256,stages=3,warps=8,split_k=1 40 48 56 64"
  "qmm.affine.mma:tile_m=32,tile_n=64,tile_k=256,stages=3,warps=8,split_k=2 24 32"
  "qmm.affine.mma_tma_ahead:tile_m=128,tile_n=64,tile_k=256,stages=3,warps=5,split_k=1,stream_k=1 80 96 112 128"
)
for spec in "${specs[@]}"; do
  read -r tactic rows_list <<<"$spec"
  for rows in $rows_list; do
    [ "$(left)" -lt 5 ] && break 2
    name=$(echo "$tactic" | cut -d: -f1 | tr . _)_r$rows
    timeout "$(cap 20)" "$H" bench --op qmm.affine --shape "rows=$rows,$shape" --tactic "$tactic" \
      --max-time 1 --json "$R/$name.json" >"$R/$name.log" 2>&1
    stamp "$name" $?
    grep -E 'tile_m|default' "$R/$name.log" | head -3
  done
done
pack

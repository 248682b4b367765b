#!/usr/bin/env bash
# Issue 11's no-cliff bar, priced by its risky points (~3 min, either card): quantized_linear
# serves M 33-64 with the bucket-64 qmm.affine pick and M 65-128 with the bucket-128 pick, so a
# kernel whose time falls as its tile's zero-filled activation rows give way to real ones makes
# M 65 slower than M 128. On 4096 x 4096 the TMA lookahead pick took 26.3 us at M 80 and 21.9 at
# M 128 (docs/benchmark_results/2026-12-06-9/call1, qmm_rows_in_tile.sh). This times the
# two cliff shapes' picks (the H100 tunes of docs/benchmark_results/2026-12-06-h100-8/call2) at
# M across each bucket (`hone bench`, cold, one JSON a point), then profiles the 4096 x 4096
# lookahead kernel at M 80 and 128 (ncu: duration, grid, DRAM and L2 bytes) to say what the
# missing rows cost.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/qmm_cliff.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin qmm_cliff "${CLIFF_BUDGET:-200}" "${1:?OUTDIR}" "${2:-build}"
H=$BUILD/tools/hone/hone
# shape, tactic, then the row counts to time it at
specs=(
  "n=28672,k=4096 qmm.affine.mma_tma:tile_m=64,tile_n=256,tile_k=256,stages=3,warps=17,split_k=1,stream_k=1 33 48 64"
  "n=28672,k=4096 qmm.affine.wgmma:tile_m=128,tile_n=256,tile_k=64,cluster_m=1,cluster_n=1,pingpong=0,split_k=1 65 80 96 112 128"
  "n=4096,k=14336 qmm.affine.mma_wgmma:tile_m=64,tile_n=64,tile_k=256,stages=3,warps=16,split_k=2 33 48 64"
  "n=4096,k=14336 qmm.affine.wgmma:tile_m=128,tile_n=128,tile_k=64,cluster_m=1,cluster_n=1,pingpong=0,split_k=4 65 80 96 112 128"
)
for spec in "${specs[@]}"; do
  read -r shape tactic rows_list <<<"$spec"
  for rows in $rows_list; do
    [ "$(left)" -lt 40 ] && break 2
    name=$(echo "$tactic" | cut -d: -f1 | tr . _)_${shape//[=,]/_}_r$rows
    timeout "$(cap 20)" "$H" bench --op qmm.affine --shape "rows=$rows,$shape,bits=4,group=64" \
      --tactic "$tactic" --max-time 1 --json "$R/$name.json" >"$R/$name.log" 2>&1
    stamp "$name" $?
    grep -E '^tactic' "$R/$name.log" | head -1 | cut -c1-40,100-
  done
done
pack
if command -v ncu >/dev/null; then
  for rows in 80 128; do
    [ "$(left)" -lt 15 ] && break
    QMM_PROBE_ONCE=1 timeout "$(cap 60)" ncu --section SpeedOfLight --section LaunchStats \
      --section MemoryWorkloadAnalysis --section Occupancy --kernel-name regex:qmm_affine_tma \
      --launch-count 1 "$BUILD/bench/qmm_probe" "$rows" 4096 4096 64 3,128,64,256,5,3,1,1 \
      >"$R/ncu_tma_ahead_r$rows.txt" 2>&1
    stamp "ncu r$rows" $?
    grep -E 'Duration|DRAM Throughput|Grid Size|Memory Throughput|L2 Cache Throughput' \
      "$R/ncu_tma_ahead_r$rows.txt" | head -6
  done
  pack
fi

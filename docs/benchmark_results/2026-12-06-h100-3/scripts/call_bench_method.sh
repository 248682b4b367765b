#!/usr/bin/env bash
# One call (~2 min, either device): the tuner's measurement of the int4 g64 gate_up default
# and the lean tune's pick (ahead=4, warps_k=4) against the qmv harness's, on one machine:
# `hone bench` cold at its calibrated batch, cold at a fixed batch of 20 launches (the
# harness's), and warm; then the harness with the parameters cold (--cold-params), twice.
# Everything lands in OUT/bench_method.tar.gz.
#
#   scripts/device/call_bench_method.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || { tar xJf .carry/ab.tar.xz && chmod +x ab/*; }
run_begin bench_method "${BUDGET:-300}" "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
SHAPE=rows=1,n=28672,k=4096,bits=4,group=64
PICK=qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=4,outputs_per_warp=16,split_k=1,ahead=4
mkdir -p "$R/empty"
for spec in "cold --cold" "cold_b20 --cold --batch 20" "warm --warm" "cold_again --cold"; do
  read -r tag flags <<<"$spec"
  HONE_CACHE_DIR=$R/empty timeout "$(cap 40)" "$H" bench --op qmv.affine --shape "$SHAPE" \
    --tactic "$PICK" $flags --max-time 4 --numerics tolerance --json "$R/bench_$tag.json" \
    >"$R/bench_$tag.log" 2>&1
  stamp "bench $tag" $?
  grep -E '^(mode|batch|default|tactic) ' "$R/bench_$tag.log" | cut -c1-150
done
pack
for round in 1 2; do
  HONE_TEST_PATHS=mma timeout "$(cap 60)" "$BUILD/bench/qmv_affine_harness" --no-check \
    --cold-params --shapes 28672x4096 --rows 1 --formats 4x64 --csv "$R/table_$round.csv" \
    >"$R/table_$round.log" 2>&1
  stamp "harness --cold-params round $round" $?
  grep -E 'warps=4,warps_k=1,outputs_per_warp=16,split_k=1,ahead=2,|warps=4,warps_k=4,outputs_per_warp=16,split_k=1,ahead=4,' \
    "$R/table_$round.csv"
done
pack

#!/usr/bin/env bash
# The ring kernels with more warps per SM, and their stalls after the tile-ahead prefetch of
# the group parameters (docs/notes/qmv_affine.md, v8, fourth stop of 2026-12-05). First the
# register-file test of the two-CTA configs and the spill tests; then ncu warp-state metrics of
# three qmv.affine int4 g64 configs at one row on 28672 x 4096: the 16-consumer ring profiled in
# call 5 of 2026-12-05-h200-2 (the same tactic), two CTAs per SM of 10 consumers, and two of 8
# consumers with two m16 tiles each (2.66 instructions per weight); then the harness table (mma
# and ring paths, rows 1, 4, 16) on 28672 x 4096 and 4096 x 14336, int4 g64 and g128; then
# racecheck of the ring configs on the minimal shapes (n = 1000: one m16 unit a CTA, so every
# warp_n past the first has no rows). About 6 minutes over carried programs; everything lands in
# OUTDIR/ring_occupancy.tar.gz, packed after each step.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/ring_occupancy.sh "$OUT" build
set -u
source "$(dirname "$0")/env.sh"
run_begin ring_occupancy 400 "${1:?OUTDIR}" "${2:-build}"

# The pairs offered fit the register file at the compiled kernels' registers; no spills.
for t in qmv_affine_kernel_test:QmvAffineKernel gemv_bf16_kernel_test:GemvBf16KernelTest; do
  timeout 60 "$BUILD/tests/device/${t%%:*}" --gtest_filter="${t#*:}.RingPairs*:${t#*:}.No*Spills" \
    >>"$R/tests.log" 2>&1
  stamp "${t%%:*} pairs and spills" $?
done
grep -E '^\[  (PASSED|FAILED) |Failure|registers a thread' "$R/tests.log" | head -8
pack

ring=qmv.affine.ring:rows_per_cta=8
i=0
for tactic in "$ring,warps=16,warps_k=1,outputs_per_warp=16,split_k=1,stages=4,ctas_per_sm=1" \
  "$ring,warps=10,warps_k=1,outputs_per_warp=16,split_k=1,stages=4,ctas_per_sm=2" \
  "$ring,warps=8,warps_k=4,outputs_per_warp=32,split_k=1,stages=4,ctas_per_sm=2"; do
  [ "$(left)" -lt 100 ] && break
  i=$((i + 1))
  HONE_TEST_TACTIC=$tactic timeout 70 ncu --kernel-name "regex:weight_ring_kernel" --launch-skip 1 \
    --launch-count 1 --section SpeedOfLight --section Occupancy --page raw \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration\.sum|sm__warps_active\.avg\.per_cycle_active|smsp__issue_active\.avg\.per_cycle_active|smsp__inst_executed\.sum$|sm__cycles_active\.avg$|launch__registers_per_thread|launch__occupancy_limit_registers|launch__grid_size' \
    "$BUILD/bench/qmv_affine_harness" --no-check --shapes 28672x4096 --rows 1 --formats 4x64 \
    >"$R/ncu_$i.log" 2>&1
  echo "== $i $tactic: rc $?" | tee -a "$R/ncu_summary.log"
  grep -E 'gpu__time_duration.sum |warps_active.avg.per_cycle|issue_active.avg.per_cycle|inst_executed.sum |cycles_active.avg |stalled_|registers_per_thread |grid_size ' \
    "$R/ncu_$i.log" | awk '$NF+0 > 0.05 || /duration|active|inst_executed|registers|grid/' |
    sort -k3 -g -r | head -16 | tee -a "$R/ncu_summary.log"
  pack
done

[ "$(left)" -lt 30 ] && exit 0
HONE_TEST_PATHS=mma,ring timeout "$(($(left) - 5))" "$BUILD/bench/qmv_affine_harness" --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,4,16 --formats 4x64,4x128 --csv "$R/qmv_table.csv" \
  >"$R/qmv_table.log" 2>&1
echo "qmv table rc=$? $(($(date +%s) - T0)) s" | tee -a "$R/qmv_table.log"
cut -c1-200 "$R/qmv_table.log" | tail -n 14
pack

# The warps without rows skip their loads and arithmetic but keep the ring's phases: racecheck of
# every ring config where most warps have none.
[ "$(left)" -lt 40 ] && exit 0
HONE_TEST_PATHS=ring HONE_DEVICE_TEST_REDUCED=2 timeout "$(($(left) - 5))" compute-sanitizer \
  --tool racecheck --error-exitcode 3 "$BUILD/tests/device/qmv_affine_kernel_test" \
  --gtest_filter='QmvAffineKernel.Every*' >"$R/racecheck.raw" 2>&1
echo "racecheck qmv ring configs (minimal shapes): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|\[  (PASSED|FAILED) ' "$R/racecheck.raw" | tr '\n' ' ')" |
  tee -a "$R/racecheck.log"
grep -m 10 -E 'hazard|Failure' "$R/racecheck.raw" >>"$R/racecheck.log"
rm -f "$R/racecheck.raw"
pack

#!/usr/bin/env bash
# qmv.affine's two-group chunks for int4 g64 (qmv_affine_chunk_groups 2; built 2026-12-05, not
# yet the default, kQmvAffineTwoGroupChunks): the kernel test of every config in the forms in use
# (the default's register pipeline lost its fragment copies in ea6e27a), the tests that hold them to the reference
# and to batch invariance (mma and ring alike), the spill and register-file tests of the new
# kernels, memcheck on minimal shapes, then the table of every mma and ring config at int4 g64
# timed in both forms in one interleaved run (HONE_TEST_CHUNK_GROUPS=2), int4 g128 beside them
# (its one-group chunks are the form the two-group chunks extend), the per-weight default
# before and after the register pipeline lost its fragment copies (ea6e27a), and the int4 g64 table
# with cold scales and biases (--cold-params, as in a model step), and ncu of the rows-1 default
# in both forms. Runs over carried programs
# (scripts/device/pack_carry.sh); everything lands in OUTDIR/two_group_chunks.tar.gz, packed
# after each step. About 9.5 minutes (the later steps are skipped when time runs short).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/two_group_chunks.sh "$OUT" build
set -u
source "$(dirname "$0")/env.sh"
run_begin two_group_chunks 580 "${1:?OUTDIR}" "${2:-build}"
T=$BUILD/tests/device/qmv_affine_kernel_test

# 1. Tests.
HONE_TEST_PATHS=mma,ring,grouped HONE_DEVICE_TEST_REDUCED=1 timeout 120 "$T" \
  --gtest_filter='*EveryConfigMatchesReference*:*TwoGroupChunks*:*RingPairsFitTheRegisterFile*:*NoCompiledConfigSpills*:QmvAffineConfig.*' \
  >"$R/tests.log" 2>&1
stamp "qmv_affine_kernel_test (every config, two-group chunks, spills, pairs)" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/tests.log" | head -10
pack

# 2. memcheck on the minimal shapes.
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=2 timeout "$(cap 100)" compute-sanitizer \
  --tool memcheck --error-exitcode 3 "$T" --gtest_filter='*TwoGroupChunks*' >"$R/sanitizer.raw" 2>&1
echo "memcheck two-group chunks: rc $? $(grep -E 'ERROR SUMMARY|\[  (PASSED|FAILED) ' \
  "$R/sanitizer.raw" | tr '\n' ' ')" | tee "$R/sanitizer.log"
grep -m 10 -E 'Invalid|Failure' "$R/sanitizer.raw" >>"$R/sanitizer.log"
rm -f "$R/sanitizer.raw"
pack

# 3. The table: both forms of every mma and ring config, interleaved.
HONE_TEST_CHUNK_GROUPS=2 HONE_TEST_PATHS=mma,ring timeout "$(cap 200)" \
  "$BUILD/bench/qmv_affine_harness" --no-check --shapes 28672x4096,4096x14336,6144x4096 \
  --rows 1,4,8,16,32 --formats 4x64,4x128 --csv "$R/qmv_table.csv" >"$R/qmv_table.log" 2>&1
stamp "qmv table, two-group chunks beside" $?
grep -E 'two-group|^4x' "$R/qmv_table.log" | cut -c1-160
pack

# 3b. The register pipeline without fragment copies (ea6e27a: the per-weight 4-bit kernels of
# one n8 tile, int4 g64's default at rows 1-8) and the 32-bit load offsets (1be900d; same bits):
# the mma configs at int4 g64, rows
# 1-8, timed by the harness built just before that commit (carried as
# .carry/prev_qmv_affine_harness.xz) and by this one, in turn, twice.
if [ -f .carry/prev_qmv_affine_harness.xz ] && [ "$(left)" -gt 150 ]; then
  xz -dc .carry/prev_qmv_affine_harness.xz >"$R/prev_harness" && chmod +x "$R/prev_harness"
  for round in 1 2; do
    for which in before after; do
      bin=$BUILD/bench/qmv_affine_harness
      [ $which = before ] && bin=$R/prev_harness
      HONE_TEST_PATHS=mma timeout "$(cap 40)" "$bin" --no-check \
        --shapes 28672x4096,4096x14336,6144x4096 --rows 1,4,8 --formats 4x64 \
        >"$R/pingpong_${which}_$round.log" 2>&1
      stamp "ping-pong A/B: $which, round $round" $?
      grep -E '^4x' "$R/pingpong_${which}_$round.log" | awk -v w=$which \
        '{print w, $2, "rows", $3, "default", $4, "inv.best", $6, "ceiling", $10}'
    done
  done
  rm -f "$R/prev_harness"
  pack
fi

# 4. The same kernels with cold scales and biases (--cold-params: they rotate with the words, as
# in a model step, where gate_up's int4 g64 launches took 40 us against the harness's 32 on the
# H100, 2026-12-05-h100), the ceiling reading all three.
[ "$(left)" -lt 30 ] && exit 0
HONE_TEST_CHUNK_GROUPS=2 HONE_TEST_PATHS=mma,ring,grouped timeout "$(cap 90)" \
  "$BUILD/bench/qmv_affine_harness" --no-check --cold-params --shapes 28672x4096,4096x14336 \
  --rows 1,16 --formats 4x64 --csv "$R/qmv_cold_params.csv" >"$R/qmv_cold_params.log" 2>&1
stamp "qmv table, cold parameters" $?
grep -E 'two-group|^4x' "$R/qmv_cold_params.log" | cut -c1-160
pack

# 5. ncu of the mma default at one row on 28672 x 4096 int4 g64, per weight (G0) and in the
# two-group chunks (G2): issue activity, warps, stalls (the rows-1 kernels read at 0.60 of the
# ceiling with their issue slots under half busy, docs/notes/qmv_affine.md).
tactic=qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=16,split_k=1
for form in 0 2; do
  [ "$(left)" -lt 50 ] && break
  HONE_TEST_TACTIC=$tactic HONE_TEST_CHUNK_GROUPS=2 HONE_TEST_PATHS=mma timeout 45 ncu \
    --kernel-name-base mangled --kernel-name "regex:qmv_affine_mma_kernel.*ELi${form}EEEv" \
    --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --page raw \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration\.sum|sm__warps_active\.avg\.per_cycle_active|smsp__issue_active\.avg\.per_cycle_active|smsp__inst_executed\.sum$|dram__throughput\.avg\.pct_of_peak_sustained_elapsed|launch__registers_per_thread' \
    "$BUILD/bench/qmv_affine_harness" --no-check --cold-params --shapes 28672x4096 --rows 1 \
    --formats 4x64 >"$R/ncu_g$form.log" 2>&1
  echo "== G$form $tactic: rc $?" | tee -a "$R/ncu_summary.log"
  grep -E 'duration.sum |warps_active.avg.per_cycle|issue_active.avg.per_cycle|inst_executed.sum |dram__throughput|stalled_|registers_per_thread ' \
    "$R/ncu_g$form.log" | awk '$NF+0 > 0.05 || /duration|active|inst_executed|registers|dram/' |
    sort -k3 -g -r | head -14 | tee -a "$R/ncu_summary.log"
  pack
done

#!/usr/bin/env bash
# One call (~2 min): the two-group chunks' parameter pairs as one 32-bit load (int4 g64,
# qmv.affine), first on a GPU:
#   1. the two-group kernel test (every mma and ring config against the reference and batch
#      invariant, and the launchers' refusal of parameter arrays not 4-byte aligned);
#   2. the qmv table with both forms of every mma and ring config (HONE_TEST_CHUNK_GROUPS=2), by
#      the harness built before the change (.carry/prev_qmv_affine_harness.xz, two 2-byte loads
#      a pair; built from 8b26e70, carried where present) and by this one, in turn, ROUNDS times
#      (default 1): the two-group form against the per-weight default, before and after.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_pair_loads.sh OUT
set -u
OUT=$1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "$gpu" | tee "$OUT/gpu.txt"
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 120 \
  build/tests/device/qmv_affine_kernel_test --gtest_filter='*TwoGroup*:*ChunkGroups*' \
  >"$OUT/two_group_test.log" 2>&1
echo "two-group test rc=$?"
grep -E "PASSED|FAILED|Failure" "$OUT/two_group_test.log" | head -n 8
# Without the previous harness the table runs once per round, this build's: its two forms side
# by side still decide the default.
forms=after
if [ -f .carry/prev_qmv_affine_harness.xz ]; then
  xz -dc .carry/prev_qmv_affine_harness.xz >/tmp/prev_harness && chmod +x /tmp/prev_harness
  forms="before after"
fi
for round in $(seq "${ROUNDS:-1}"); do
  for which in $forms; do
    bin=build/bench/qmv_affine_harness
    [ $which = before ] && bin=/tmp/prev_harness
    HONE_TEST_CHUNK_GROUPS=2 HONE_TEST_PATHS=mma,ring timeout 60 "$bin" --no-check \
      --shapes 28672x4096,4096x14336 --rows 1,16 --formats 4x64 \
      --csv "$OUT/pairs_${which}_$round.csv" >"$OUT/pairs_${which}_$round.log" 2>&1
    echo "$which round $round rc=$?"
    grep -E '^4x|two-group' "$OUT/pairs_${which}_$round.log" | cut -c1-60,200-330
  done
done

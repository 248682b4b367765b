#!/usr/bin/env bash
# One call (~6 min, an H200 for the step bar): `deep=2` as a qmv.affine tuning candidate (two
# blocks of words ahead in the staged twin of the int4 g64 one-tile J 2 kernel; QmvAffineConfig::
# deep), which an H200 and an H100 timed in opposite directions as a default.
# - The qmv.affine kernel test (every config, the deep ones included, against the reference and
#   bitwise against the default's K order) and op test, on the reduced shapes.
# - The harness on 28672 x 4096 and 4096 x 14336 int4 g64 at rows 1, 4, 8: every config, so the
#   deep configs beside their deep=0 twins, same run.
# - The PyTorch bf16 peer of the Llama-3.1-8B step (batch 1, context 4k), then the int4 g64 step:
#   its linears tuned at one row in tolerance numerics (lm_head included; as step_tolerance.sh),
#   then `hone step` (default, default + PDL, tuned, tuned + PDL interleaved; PDL checked
#   against PDL off over 1000 replays), with the picks listed.
# - compute-sanitizer memcheck and racecheck of the deep configs alone (HONE_TEST_TACTIC_HAS,
#   the reduced shapes: 72 x 4096 int4 g64 at rows 1 and 9), in what is left.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_deep_tactic.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin deep_tactic "${BUDGET:-560}" "${1:?OUTDIR}" build
H=$BUILD/tools/hone/hone
M=models/llama-3.1-8b.json
cat "$R/gpu.txt"
device_tests qmv_affine_kernel_test qmv_affine_op_test
pack
HONE_TEST_PATHS=mma timeout "$(cap 60)" "$BUILD/bench/qmv_affine_harness" --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,4,8 --formats 4x64 --csv "$R/harness.csv" \
  >"$R/harness.log" 2>&1
stamp harness $?
grep -E 'deep=2' "$R/harness.log" | head -3 | cut -c1-160
pack
peer_and_int4_tune "$M" "$R/cache" "${TUNE_BUDGET:-160}"
pack
HONE_CACHE_DIR=$R/cache timeout "$(cap 110)" "$H" step --model "$M" --batch 1 --context 4k \
  --quant int4:g64 --samples 9 --json "$R/step.json" >"$R/step.log" 2>&1
stamp "step int4 g64" $?
sed -n '/| variant/,/^$/p' "$R/step.log"
grep -E 'deep=2' "$R/cache/tuning-cache.json" | head -5 | cut -c1-200
pack
T=$BUILD/tests/device/qmv_affine_kernel_test
for tool in memcheck racecheck; do
  [ "$(left)" -lt 30 ] && break
  HONE_TEST_TACTIC_HAS=deep=2 HONE_TEST_PATHS=mma HONE_DEVICE_TEST_REDUCED=1 \
    timeout "$(cap 90)" compute-sanitizer --tool $tool --error-exitcode 3 "$T" \
    --gtest_filter='*EveryConfigMatchesReference*' >"$R/sanitizer_$tool.raw" 2>&1
  rc=$?
  echo "$tool deep=2: rc $rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|\[  (PASSED|FAILED) ' \
    "$R/sanitizer_$tool.raw" | tr '\n' ' ')" | tee "$R/sanitizer_$tool.log"
  grep -m 10 -E 'Invalid|Race|Failure' "$R/sanitizer_$tool.raw" >>"$R/sanitizer_$tool.log"
  rm -f "$R/sanitizer_$tool.raw"
  pack
done

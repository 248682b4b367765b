#!/usr/bin/env bash
# One call (~9 min, either card; an H200 for issue 14's bar): the rmsnorm after o_proj and down
# done by those linears' last CTA (ops::cuda::quantized_linear_rmsnorm, StepLaunch::fuse_norm),
# and what the last stop left untried on a GPU (the device-side gate counts, rmsnorm's few-rows
# default, rmsnorm_row.cuh, `deep=2` on an H200).
# - Tests, reduced shapes: linear_norm_test (the fused launch against quantized_linear then
#   rmsnorm, bit for bit, every CTA size and rmsnorm order), the step's fused-against-separate
#   test, gate_counts_test, rmsnorm_op_test, silu_mul_op_test, rmsnorm_row_test; then
#   compute-sanitizer memcheck and racecheck of linear_norm_test.
# - The PyTorch bf16 peer of the Llama-3.1-8B step (batch 1, context 4k) and the int4 g64 step:
#   its linears tuned at one row in tolerance numerics (deep=2 a candidate), then `hone step`
#   with the fused-norm variant beside the default's separate launches, and the step without
#   its rmsnorm launches (timing only: their share of the chain), same run.
# - Two tunes of Qwen2.5-1.5B's rmsnorm buckets compared (two_tunes.sh), in what is left.
# TESTS="...": the device tests run after the two fused-against-separate ones (default: the four
# above). TUNE_BUDGET=0: no tune (the step's tuned variants are its defaults).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_norm.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin norm "${BUDGET:-560}" "${1:?OUTDIR}" build
H=$BUILD/tools/hone/hone
M=models/llama-3.1-8b.json
unset HONE_CACHE HONE_AUTOTUNE
cat "$R/gpu.txt"
device_tests linear_norm_test
HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 90)" "$BUILD/tests/device/decode_step_reference_test" \
  --gtest_filter='*SeparateLaunchesBitForBit*' >"$R/test_step_fused.log" 2>&1
stamp "step fused-against-separate tests" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_step_fused.log" | head -6
# shellcheck disable=SC2086 # a list of test names
device_tests ${TESTS-gate_counts_test rmsnorm_op_test silu_mul_op_test rmsnorm_row_test}
pack
sanitize linear_norm linear_norm_test '*TheDefaults*'
pack
peer_and_int4_tune "$M" "$R/cache" "${TUNE_BUDGET:-100}"
pack
HONE_CACHE_DIR=$R/cache timeout "$(cap 120)" "$H" step --model "$M" --batch 1 --context 4k \
  --quant int4:g64 --samples 9 --norm-variant --omit rmsnorm --json "$R/step.json" >"$R/step.log" 2>&1
stamp "step int4 g64 (with the other norm variant)" $?
sed -n '/| variant/,/^$/p' "$R/step.log"
grep -E 'deep=2' "$R/cache/tuning-cache.json" | head -5 | cut -c1-200
pack
if [ "$(left)" -gt 100 ]; then
  TUNE_ARGS="--ops rmsnorm" TUNE_CAP=45 TT_BUDGET=$(cap 100) MODEL=models/qwen2.5-1.5b.json \
    bash "$(dirname "$0")/two_tunes.sh" "$OUTDIR" "$BUILD"
  stamp "two rmsnorm tunes compared (two_tunes/)" $?
fi
pack

#!/usr/bin/env bash
# One call (~6 min on an H100, ~9 on an H200 with its tune): the rmsnorm before qkv and gate/up
# done in those linears' prologues, the residual added by the linear before
# (ops::cuda::rmsnorm_quantized_linear, quantized_linear_add, StepLaunch::fuse_norm_in).
# - Tests, reduced shapes: norm_in_test (the fused launches against rmsnorm then the linear, bit
#   for bit, every CTA size of the slot and every rmsnorm order; the residual epilogue against
#   rmsnorm's residual_out), the step's fused-against-separate tests (both norm fusions), the
#   qmv.affine op and PDL tests (the epilogue changed for every mma kernel), rmsnorm_row_test
#   (its launch bounds); then compute-sanitizer memcheck and racecheck of norm_in_test.
# - The PyTorch bf16 peer of the Llama-3.1-8B step (batch 1, context 4k) and the int4 g64 step:
#   on an H200 its linears tuned at one row in tolerance numerics first (TUNE_BUDGET, default
#   100 there, 0 on other cards), then `hone step` with the two norm-in variants beside the
#   default's separate launches and without the rmsnorm launches (timing only), same run.
# - Qwen2.5-1.5B's int4 g64 step the same way, in what is left.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_norm_in.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin norm_in "${BUDGET:-560}" "${1:?OUTDIR}" build
H=$BUILD/tools/hone/hone
M=models/llama-3.1-8b.json
unset HONE_CACHE HONE_AUTOTUNE
cat "$R/gpu.txt"
tune_budget=0
grep -q H200 "$R/gpu.txt" && tune_budget=100
device_tests norm_in_test
HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/decode_step_reference_test" \
  --gtest_filter='*SeparateLaunchesBitForBit*' >"$R/test_step_fused.log" 2>&1
stamp "step fused-against-separate tests" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_step_fused.log" | head -6
# shellcheck disable=SC2086 # a list of test names
device_tests ${TESTS-rmsnorm_row_test qmv_affine_op_test step_ops_pdl_test}
pack
for tool in memcheck racecheck; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 90)" compute-sanitizer --tool $tool --error-exitcode 3 \
    "$BUILD/tests/device/norm_in_test" --gtest_filter='*TheDefaults*' >"$R/sanitizer_$tool.raw" 2>&1
  rc=$?
  echo "$tool norm_in: rc $rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|\[  (PASSED|FAILED) ' \
    "$R/sanitizer_$tool.raw" | tr '\n' ' ')" | tee "$R/sanitizer_$tool.log"
  grep -m 10 -E 'Invalid|Race|Failure' "$R/sanitizer_$tool.raw" >>"$R/sanitizer_$tool.log"
  rm -f "$R/sanitizer_$tool.raw"
done
pack
peer_and_int4_tune "$M" "$R/cache" "${TUNE_BUDGET:-$tune_budget}"
pack
HONE_CACHE_DIR=$R/cache timeout "$(cap 150)" "$H" step --model "$M" --batch 1 --context 4k \
  --quant int4:g64 --samples 9 --norm-in-variant --omit rmsnorm --json "$R/step.json" \
  >"$R/step.log" 2>&1
stamp "step int4 g64 (with the norm-in variants)" $?
sed -n '/| variant/,/^$/p' "$R/step.log"
pack
if [ "$(left)" -gt 90 ]; then
  HONE_CACHE_DIR=$R/cache timeout "$(cap 90)" "$H" step --model models/qwen2.5-1.5b.json \
    --batch 1 --context 4k --quant int4:g64 --samples 9 --norm-in-variant --no-breakdown \
    --json "$R/step_qwen.json" >"$R/step_qwen.log" 2>&1
  stamp "step Qwen2.5-1.5B int4 g64 (with the norm-in variants)" $?
  sed -n '/| variant/,/^$/p' "$R/step_qwen.log"
fi
pack

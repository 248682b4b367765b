#!/usr/bin/env bash
# One H200 call (~8 min): the fused SiLU epilogue's device tests (first GPU run), the read
# ceiling's qrows patterns on the int4 gate_up and down words (words alone, with their group
# parameters in either layout, CTAs per SM capped as the mma pick's registers cap them), then
# issue 14's step with tolerance-mode linears (step_tolerance.sh: bf16 and int4 g64, the
# separate SiLU launch beside the step's fused default).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_h200_step.sh OUT
set -u
OUT=$1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
for t in gemv_bf16_op_test qmv_affine_op_test decode_step_reference_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout 150 build/tests/device/$t --gtest_filter='*Silu*' \
    >"$OUT/silu_$t.log" 2>&1
  echo "$t rc=$?"
  tail -n 3 "$OUT/silu_$t.log"
done
timeout 90 build/bench/read_ceiling --shapes 28672x2048,4096x7168 --params 64 \
  --json "$OUT/rc.json" >"$OUT/rc.log" 2>&1
echo "read_ceiling rc=$?"
grep -E "qrows|device|bandwidth|J2 k1|J4 k1" "$OUT/rc.log"
scripts/device/step_tolerance.sh "$OUT" build >"$OUT/step_tolerance.out" 2>&1
echo "step_tolerance rc=$?"
tail -n 30 "$OUT/step_tolerance.out"

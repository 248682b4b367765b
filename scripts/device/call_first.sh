#!/usr/bin/env bash
# The first call of a device session on a new build (~4 min on an H100, ~9 on an H200): the
# device tests of the decode kernels and qmm.affine on reduced shapes, then, by the card it got,
# issue 14's H200 step (call_h200_step.sh) or the ncu profile of qmv.affine's 8- and 16-row
# int4 g64 defaults (profile.sh rows) and the 4096 x 4096 qmm.affine picks (profile.sh ncu is
# the whole set; this runs only the rows step).
#
#   scripts/device/call_first.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin first 590 "${1:?OUTDIR}" build
cat "$R/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test gemv_bf16_op_test decode_step_reference_test \
  qmm_affine_op_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
done
pack
if grep -q H200 "$R/gpu.txt"; then
  mkdir -p "$R/h200_step"
  timeout "$(cap 520)" bash scripts/device/call_h200_step.sh "$R/h200_step" >"$R/h200_step.log" 2>&1
  stamp call_h200_step $?
  tail -n 40 "$R/h200_step.log"
else
  BUILD=build timeout "$(cap 420)" bash scripts/device/profile.sh "$R" rows >"$R/profile.log" 2>&1
  stamp profile_rows $?
  cat "$R/profile.log"
fi
pack

#!/usr/bin/env bash
# The first call of a device session on a new build (~5 min on an H100, within 560 s): the
# device tests of qmv.affine, the decode step and qmm.affine on reduced shapes, then, by the card,
# issue 14's H200 step (call_h200_step.sh), or qmv.affine's mma configs timed at rows 16
# (FIRST_ROWS) on the four Llama-3.1-8B linears (qmv_affine_harness; FIRST_STEP=0 times them on
# an H200 too), and with FIRST_PROFILE=1 the ncu profiles of qmv.affine's 8- and 16-row int4 g64
# kernels (profile.sh rows).
#
#   scripts/device/call_first.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin first "${FIRST_BUDGET:-560}" "${1:?OUTDIR}" build
cat "$R/gpu.txt"
device_tests qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test qmm_affine_op_test
pack
if grep -q H200 "$R/gpu.txt" && [ "${FIRST_STEP:-1}" = 1 ]; then
  mkdir -p "$R/h200_step"
  timeout "$(cap 520)" bash scripts/device/call_h200_step.sh "$R/h200_step" >"$R/h200_step.log" 2>&1
  stamp call_h200_step $?
  tail -n 40 "$R/h200_step.log"
else
  # The 16-row slot's J 2 kernel (`ahead=2` of rows_per_cta=16, outputs_per_warp=32) beside its
  # slot's own, every config of either, two rounds, cold.
  rows=${FIRST_ROWS:-16}
  for round in 1 2; do
    HONE_TEST_PATHS=mma timeout "$(cap 150)" "$BUILD/bench/qmv_affine_harness" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows "$rows" --formats 4x64,4x128 \
      --csv "$R/r16_$round.csv" >"$R/r16_$round.log" 2>&1
    stamp "harness rows $rows round $round" $?
  done
  grep -E '^4x' "$R/r16_1.log" | cut -c1-150
  if [ "${FIRST_PROFILE:-0}" = 1 ]; then
    pack
    BUILD=build timeout "$(cap 200)" bash scripts/device/profile.sh "$R" rows >"$R/profile.log" 2>&1
    stamp profile_rows $?
    cat "$R/profile.log"
  fi
fi
pack

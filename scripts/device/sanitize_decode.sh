#!/usr/bin/env bash
# Issue 13's sanitizer point over carried programs (scripts/device/pack_carry.sh): compute-
# sanitizer memcheck and racecheck of every compiled config of the decode kernels, through the
# kernel tests on their reduced shapes (qmv.affine: the mma, grouped, stream and ring paths, and
# the two-group chunks; gemv.bf16: every path), each check in turn, then the two op tests (the
# defaults, the public entry point, the vendor tactics) under memcheck. Each run is capped so
# that all fit one call; a cap reached shows as rc=124 in steps.log, and the ERROR SUMMARY lines
# of every log are listed there. About 9 minutes.
#
# A racecheck of every config on the reduced shapes took longer than one call
# (2026-12-05-h200-3: both kernel tests cut at their caps); racecheck now runs on the smallest
# set (HONE_DEVICE_TEST_REDUCED=2). To split it over calls all the same, name the checks to run after the build directory
# (default all six), set HONE_TEST_PATHS (tests/device/path_filter.h: fma, mma, stream, grouped,
# ring) to check one path's configs, and SANITIZE_CAP to give each check that many seconds.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/sanitize_decode.sh "$OUT" build
#   tar xJf .carry/bin.tar.xz && HONE_TEST_PATHS=grouped SANITIZE_CAP=200 \
#     scripts/device/sanitize_decode.sh "$OUT" build qmv_kernel_racecheck
set -u
source "$(dirname "$0")/env.sh"
run_begin sanitize_decode 570 "${1:?OUTDIR}" "${2:-build}"
command -v compute-sanitizer >/dev/null || { stamp "compute-sanitizer not on PATH" 1; exit 1; }
export HONE_DEVICE_TEST_REDUCED=1
shift 2 2>/dev/null || shift $#
only=" $* "
echo "paths ${HONE_TEST_PATHS:-all}; checks ${*:-all}" | tee -a "$R/steps.log"
# name, tool, test program, cap [s]
for spec in "qmv_kernel_memcheck memcheck qmv_affine_kernel_test 120" \
  "qmv_kernel_racecheck racecheck qmv_affine_kernel_test 130" \
  "gemv_kernel_memcheck memcheck gemv_bf16_kernel_test 70" \
  "gemv_kernel_racecheck racecheck gemv_bf16_kernel_test 80" \
  "qmv_op_memcheck memcheck qmv_affine_op_test 70" \
  "gemv_op_memcheck memcheck gemv_bf16_op_test 70"; do
  read -r name tool program seconds <<<"$spec"
  [ "$only" != "  " ] && [[ $only != *" $name "* ]] && continue
  seconds=${SANITIZE_CAP:-$seconds}
  [ "$(left)" -lt 30 ] && { stamp "$name skipped: too little time" 1; continue; }
  # racecheck on the smallest set (tests/device/device_test.h, level 2: every config on one
  # shape per format at 1 and 32 rows in qmv_affine_kernel_test; the reduced set elsewhere).
  level=1
  [ "$tool" = racecheck ] && level=2
  HONE_DEVICE_TEST_REDUCED=$level timeout "$(cap "$seconds")" compute-sanitizer --tool "$tool" \
    --error-exitcode 86 "$BUILD/tests/device/$program" >"$R/$name.log" 2>&1
  stamp "$name" $?
  grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) ' "$R/$name.log" |
    sed "s/^/  $name: /" | tee -a "$R/steps.log"
  pack
done

#!/usr/bin/env bash
# One call (~6 min): the STAGE twins of the register pipeline at J 1 and at more than one
# activation tile (staged only when forced), and the shared staging helper. The qmv.affine kernel
# and op tests and the decode step's reference test on reduced shapes; compute-sanitizer memcheck
# and racecheck of the staged tests; the harness with --staging off, on and auto in turn, and the
# harness of 36f956f (prev_harness, auto), twice, on the four Llama-3.1-8B int4 g64 linears at
# rows 1, 4, 8, 16, 24, 32.
#
#   tar xJf .carry/call4.tar.xz && scripts/call_staged_j1.sh OUT
set -u
source scripts/device/env.sh
run_begin staged_j1 560 "${1:?OUTDIR}" build
cat "$R/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  HONE_TEST_PATHS=mma timeout "$(cap 100)" "$CS" --tool $tool --error-exitcode 9 \
    "$BUILD/tests/device/qmv_affine_kernel_test" --gtest_filter='*Stag*' >"$R/$tool.log" 2>&1
  stamp "$tool staged" $?
  grep -hE '^\[  (PASSED|FAILED) |ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$R/$tool.log" | head -4
done
pack
for round in 1 2; do
  for mode in off on auto prev; do
    bin=$BUILD/bench/qmv_affine_harness
    args="--staging $mode"
    [ $mode = prev ] && bin=./prev_harness args=
    HONE_TEST_PATHS=mma timeout "$(cap 60)" $bin --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16,24,32 --formats 4x64 \
      $args --csv "$R/ab_${mode}_$round.csv" >"$R/ab_${mode}_$round.log" 2>&1
    stamp "harness $mode round $round" $?
  done
done
pack

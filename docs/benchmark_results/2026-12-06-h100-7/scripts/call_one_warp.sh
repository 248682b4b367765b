#!/usr/bin/env bash
# One call (~6 min, either device): the first GPU run of the one-warp default CTA at one K slice.
# The qmv.affine kernel and op tests and the decode step's tests on reduced shapes, then the
# harness of the build before (BASE) and of this one in turn, twice, on 28672 x 4096 (one K slice)
# and 4096 x 14336 (eight, unchanged), int4 g64 and g128, rows 1, 4, 8, 16, 32, then the int4 g64
# decode step at batch 1 against the PyTorch bf16 peer (call_int4_step_quick.sh).
#
#   tar xJf .carry/bin.tar.xz && xz -dc .carry/base_harness.xz >base_harness && \
#     chmod +x base_harness && scripts/device/call_one_warp.sh OUT base_harness
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin one_warp "${ONE_WARP_BUDGET:-400}" "${1:?OUTDIR}" build
base=${2:?BASE harness}
cat "$R/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test step_ops_pdl_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
done
pack
for round in 1 2; do
  for build in base new; do
    h=$BUILD/bench/qmv_affine_harness
    [ "$build" = base ] && h=$base
    HONE_TEST_PATHS=mma timeout "$(cap 60)" "$h" --no-check --shapes 28672x4096,4096x14336 \
      --rows 1,4,8,16,32 --formats 4x64,4x128 --csv "$R/${build}_$round.csv" \
      >"$R/${build}_$round.log" 2>&1
    stamp "harness $build round $round" $?
  done
  pack
done
grep -E '^4x' "$R/new_1.log" | cut -c1-110
timeout "$(cap 200)" bash scripts/device/call_int4_step_quick.sh "$R" >"$R/int4_step.out" 2>&1
stamp int4_step $?
cat "$R/int4_step.out"
pack

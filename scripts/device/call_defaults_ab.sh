#!/usr/bin/env bash
# One call (~6 min, either device): the first GPU run of a build that changes qmv.affine's
# defaults without changing their K order. The qmv.affine kernel and op tests and the decode
# step's tests on reduced shapes (the op test checks the default's batch invariance at rows
# 1-32), then the harness of the build before (BASE, a program) and of this build in turn, twice,
# on SHAPES (default the four Llama-3.1-8B linears), int4 g64 and g128, at ROWS (default
# 1,4,8,16,24,32). scripts/ab.py of a results folder compares the defaults and every config.
#
#   tar xJf .carry/bin.tar.xz && xz -dc .carry/base_harness.xz >base_harness && \
#     chmod +x base_harness && scripts/device/call_defaults_ab.sh OUT base_harness
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin defaults_ab "${AB_BUDGET:-420}" "${1:?OUTDIR}" build
base=${2:?BASE harness}
shapes=${SHAPES:-28672x4096,4096x14336,6144x4096,4096x4096}
rows=${ROWS:-1,4,8,16,24,32}
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
    HONE_TEST_PATHS=mma timeout "$(cap 100)" "$h" --no-check --shapes "$shapes" --rows "$rows" \
      --formats 4x64,4x128 --csv "$R/${build}_$round.csv" >"$R/${build}_$round.log" 2>&1
    stamp "harness $build round $round" $?
  done
  pack
done
grep -E '^4x' "$R/new_1.log" | cut -c1-110
pack

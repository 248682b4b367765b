#!/usr/bin/env bash
# One call (~5 min, either device): the first GPU run of a build that changes qmv.affine's
# kernels without changing their bits. The qmv.affine kernel and op tests and the decode step's
# reference test on reduced shapes, then the harness of the build before (BASE, a program) and
# of this build in turn, twice, on the four Llama-3.1-8B linears, int4 g64 and g128, every mma
# config at ROWS (default 8,16,32). A config's time in one build over its time in the other is
# read from the CSVs (same candidate names). VAR (a program) adds a third build to each round.
#
#   tar xJf .carry/bin.tar.xz && xz -dc .carry/base_harness.xz >base_harness && \
#     chmod +x base_harness && scripts/device/call_cursor_ab.sh OUT base_harness [ROWS]
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin cursor_ab "${AB_BUDGET:-420}" "${1:?OUTDIR}" build
base=${2:?BASE harness}
rows=${3:-8,16,32}
cat "$R/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
done
pack
for round in 1 2; do
  for build in base new ${VAR:+var}; do
    h=$BUILD/bench/qmv_affine_harness
    [ "$build" = base ] && h=$base
    [ "$build" = var ] && h=$VAR
    HONE_TEST_PATHS=mma timeout "$(cap 90)" "$h" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows "$rows" --formats 4x64,4x128 \
      --csv "$R/${build}_$round.csv" >"$R/${build}_$round.log" 2>&1
    stamp "harness $build round $round" $?
  done
  pack
done
grep -E '^4x' "$R/new_1.log" | cut -c1-150
pack

#!/usr/bin/env bash
# One call (~5 min, either device): the qmv.affine kernel and op tests on reduced shapes (the
# first GPU run of a build), issue 13's cold table (call_cold_table.sh), then the staging rule's
# A/B in one build: the harness on the four Llama-3.1-8B int4 g64 linears at rows 1, 4, 8 with
# --staging auto, off and on in turn, twice.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_verify_ab.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin verify_ab 400 "${1:?OUTDIR}" build
cat "$R/gpu.txt"
device_tests qmv_affine_kernel_test qmv_affine_op_test
pack
for round in 1 2; do
  for mode in auto off on; do
    HONE_TEST_PATHS=mma timeout "$(cap 60)" "$BUILD/bench/qmv_affine_harness" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8 --formats 4x64 \
      --staging $mode --csv "$R/ab_${mode}_$round.csv" >"$R/ab_${mode}_$round.log" 2>&1
    stamp "harness staging $mode round $round" $?
  done
done
grep -E '^4x' "$R/ab_auto_1.log" | head -14 | cut -c1-120
pack
bash scripts/device/call_cold_table.sh "$1" build

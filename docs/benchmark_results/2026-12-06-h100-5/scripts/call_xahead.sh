#!/usr/bin/env bash
# One call (~2 min): the register pipeline's kernels of two or more activation tiles without the
# activation look-ahead (kXAhead off for S = 0, NT >= 2, int4 per weight: 104-170 registers where
# 128-234). var_kernel_test: the kernel test of that build on reduced shapes; then the harness of
# this build (base) and of that one (var) in turn, twice, on the four Llama-3.1-8B int4 g64
# linears at rows 16, 24, 32.
#
#   tar xJf .carry/call6.tar.xz && bash call_xahead.sh OUT
set -u
source scripts/device/env.sh
run_begin xahead 150 "${1:?OUTDIR}" build
cat "$R/gpu.txt"
HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 90)" ./var_kernel_test >"$R/test_var.log" 2>&1
stamp "var kernel test" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_var.log" | head -6
for round in 1 2; do
  for which in base var; do
    bin=$BUILD/bench/qmv_affine_harness
    [ $which = var ] && bin=./var_harness
    HONE_TEST_PATHS=mma timeout "$(cap 60)" $bin --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 16,24,32 --formats 4x64 \
      --csv "$R/ab_${which}_$round.csv" >"$R/ab_${which}_$round.log" 2>&1
    stamp "harness $which round $round" $?
  done
done
pack

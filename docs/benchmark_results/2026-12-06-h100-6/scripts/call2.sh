#!/usr/bin/env bash
# call2 (~25 s, the warm H100 of call1): the 16-row slot's J 2 kernel beside its slot's own at
# rows 12 (mma path, int4 g64 and g128, one round), then memcheck of qmv_affine_kernel_test on
# the sanitizer shapes. Run from the repository root with the programs of .carry/bin.tar.xz.
source scripts/device/env.sh
export BUILD=build
mkdir -p "$OUT/r"
HONE_TEST_PATHS=mma timeout 70 build/bench/qmv_affine_harness --no-check \
  --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 12 --formats 4x64,4x128 \
  --csv "$OUT/r/r12.csv" >"$OUT/r/r12.log" 2>&1
SANITIZE_CAP=170 timeout 200 bash scripts/device/sanitize_decode.sh "$OUT" build qmv_kernel_memcheck

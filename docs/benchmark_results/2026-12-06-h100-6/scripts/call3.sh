#!/usr/bin/env bash
# call3 (~170 s, the same warm H100): rows 16 on the two large linears with every path (the ring
# included), then racecheck of qmv_affine_kernel_test, cut at 150 s (the every-config test
# finished under it; the staged test was running when it was cut).
source scripts/device/env.sh
export BUILD=build
mkdir -p "$OUT/r"
timeout 90 build/bench/qmv_affine_harness --no-check --shapes 28672x4096,4096x14336 --rows 16 \
  --formats 4x64,4x128 --csv "$OUT/r/r16_all.csv" >"$OUT/r/r16_all.log" 2>&1
SANITIZE_CAP=150 timeout 170 bash scripts/device/sanitize_decode.sh "$OUT" build qmv_kernel_racecheck

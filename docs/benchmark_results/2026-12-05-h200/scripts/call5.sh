#!/usr/bin/env bash
# Call 5 of 2026-12-05: the ring with one arrival per consumer warp and no proxy fence per thread
# and step: its tests (reduced), the stall breakdown of three single configs,
# the qmv.affine table (mma and ring paths) and the gemv.bf16 table. Programs carried.
set -uo pipefail
out=${OUT:?}/call5
mkdir -p "$out"
tar xJf .carry/bin.tar.xz || exit 1
BUILD=build
. scripts/device/env.sh
t0=$(date +%s)
HONE_DEVICE_TEST_REDUCED=1 timeout 100 build/tests/device/qmv_affine_kernel_test >"$out/tests.log" 2>&1
echo "qmv tests: rc $? $(( $(date +%s) - t0 )) s"
HONE_DEVICE_TEST_REDUCED=1 timeout 60 build/tests/device/gemv_bf16_kernel_test >>"$out/tests.log" 2>&1
echo "gemv tests: rc $?"
grep -E '^\[  (PASSED|FAILED) |Failure' "$out/tests.log" | head -6
OUT=$OUT bash docs/benchmark_results/2026-12-05-h200/scripts/profile_stalls.sh 2>&1 | tail -n 60
mv "$OUT/stalls" "$out/stalls"
HONE_TEST_PATHS=mma,ring timeout 150 build/bench/qmv_affine_harness --no-check \
  --shapes 28672x4096,4096x14336,4096x4096 --rows 1,4,16,32 --formats 4x64 \
  --csv "$out/qmv_table.csv" >"$out/qmv_table.log" 2>&1
echo "qmv table: rc $?"; tail -n 13 "$out/qmv_table.log"
HONE_TEST_PATHS=mma,ring timeout 100 build/bench/gemv_bf16_harness --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,16,32 --csv "$out/gemv_table.csv" >"$out/gemv_table.log" 2>&1
echo "gemv table: rc $?"; tail -n 9 "$out/gemv_table.log"

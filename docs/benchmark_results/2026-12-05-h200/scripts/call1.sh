#!/usr/bin/env bash
# Call 1 of 2026-12-05: the ring paths' correctness (reduced shape sets), memcheck and racecheck of
# the ring configs, then a first ring-vs-mma timing on two large matrices. Programs carried from
# the CPU machine (scripts/device/pack_carry.sh).
set -uo pipefail
out=${OUT:?}/call1
mkdir -p "$out"
tar xJf .carry/bin.tar.xz || exit 1
BUILD=build
. scripts/device/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
run() { # NAME SECONDS CMD...: one log per step, its rc and time on stdout
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  timeout "$secs" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: rc $rc, $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$out/$name.log" | tr '\n' ' ')"
}
export HONE_DEVICE_TEST_REDUCED=1
run qmv_kernel 160 build/tests/device/qmv_affine_kernel_test
run gemv_kernel 80 build/tests/device/gemv_bf16_kernel_test
grep -m 10 -E 'Failure|differs|FAIL' "$out/qmv_kernel.log" "$out/gemv_kernel.log"
export HONE_DEVICE_TEST_REDUCED=2 HONE_TEST_PATHS=ring
for tool in memcheck racecheck; do
  run "qmv_$tool" 45 compute-sanitizer --tool $tool --error-exitcode 3 \
    build/tests/device/qmv_affine_kernel_test --gtest_filter='QmvAffineKernel.Every*'
  run "gemv_$tool" 45 compute-sanitizer --tool $tool --error-exitcode 3 \
    build/tests/device/gemv_bf16_kernel_test --gtest_filter='GemvBf16KernelTest.Every*'
done
grep -h -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out"/*check.log
unset HONE_DEVICE_TEST_REDUCED
export HONE_TEST_PATHS=mma,ring
run qmv_table 120 build/bench/qmv_affine_harness --no-check --shapes 28672x4096,4096x14336 \
  --rows 1,16,32 --formats 4x64 --csv "$out/qmv_table.csv"
tail -n 8 "$out/qmv_table.log"

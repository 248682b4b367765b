#!/usr/bin/env bash
# The weights-once ring paths of qmv.affine and gemv.bf16 (the mma paths' K order) on the GPU
# machine, in one call over a carried build: the kernel and op tests (every ring config
# bit-identical to the mma path of its k_slices, 0 spill bytes), compute-sanitizer memcheck and
# racecheck of the ring kernels, then the timing tables of the kernel harnesses (every
# admissible config of every cell, interleaved with a loads-only read of the same rotated
# weights, and for gemv.bf16 cuBLASLt) on the large matrices.
#
#   scripts/device/weight_ring.sh OUTDIR [BUILD_DIR] [STEPS]   # BUILD_DIR default build
#
# STEPS (comma-separated, default tests,sanitizer,table,gemv). Programs used, from BUILD_DIR:
# tests/device/{qmv_affine,gemv_bf16}_kernel_test, tests/device/{qmv_affine,gemv_bf16}_op_test,
# bench/qmv_affine_harness, bench/gemv_bf16_harness.
# Environment: HONE_RING_SHAPES, HONE_RING_ROWS, HONE_RING_FORMATS (the tables' lists, harness
# spelling). OUTDIR receives tests.log, sanitizer.log, table.log / table.csv (qmv.affine) and
# gemv.log / gemv.csv.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [BUILD_DIR] [STEPS]" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=$1
BUILD=${2:-build}
steps=${3:-tests,sanitizer,table,gemv}
case $out in /*) ;; *) out=$root/$out ;; esac
case $BUILD in /*) ;; *) BUILD=$root/$BUILD ;; esac
# shellcheck source=scripts/device/env.sh
. "$root/scripts/device/env.sh"
mkdir -p "$out"
status=()
step() { status+=("$1: $([ "$2" -eq 0 ] && echo ok || echo "FAILED (rc $2)")"); }
want() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }
unset HONE_CACHE HONE_AUTOTUNE HONE_TACTIC_QMV_AFFINE HONE_TACTIC_GEMV_BF16 HONE_TEST_PATHS

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

if want tests; then
  t0=$(date +%s)
  {
    rc=0
    for t in qmv_affine_kernel_test qmv_affine_op_test gemv_bf16_kernel_test gemv_bf16_op_test; do
      "$BUILD/tests/device/$t" || rc=$?
    done
    [ $rc -eq 0 ]
  } >"$out/tests.log" 2>&1
  step "tests ($(( $(date +%s) - t0 )) s)" $?
  grep -E '^\[  (FAILED|PASSED|SKIPPED) ' "$out/tests.log" | sort | uniq -c | head -20
fi

if want sanitizer; then
  t0=$(date +%s)
  : >"$out/sanitizer.log"
  rc=0
  for tool in memcheck racecheck; do
    for t in qmv_affine_kernel_test:QmvAffineKernel.Every* \
      gemv_bf16_kernel_test:GemvBf16KernelTest.Every*; do
      HONE_TEST_PATHS=ring HONE_DEVICE_TEST_REDUCED=2 timeout 120 compute-sanitizer \
        --tool "$tool" --error-exitcode 3 "$BUILD/tests/device/${t%%:*}" \
        --gtest_filter="${t#*:}" >"$out/sanitizer_$tool.raw" 2>&1
      r=$?
      [ $r -ne 0 ] && rc=$r
      summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|\[  (PASSED|FAILED) ' \
        "$out/sanitizer_$tool.raw" | tr '\n' ' ')
      echo "$tool ${t%%:*} (ring configs, minimal shapes): rc $r; $summary" >>"$out/sanitizer.log"
      grep -m 20 -E 'Invalid|Race|hazard|Failure' "$out/sanitizer_$tool.raw" >>"$out/sanitizer.log"
      rm -f "$out/sanitizer_$tool.raw"
    done
  done
  step "sanitizer ($(( $(date +%s) - t0 )) s)" $rc
  cat "$out/sanitizer.log"
fi

if want table; then
  t0=$(date +%s)
  shapes=${HONE_RING_SHAPES:-28672x4096,4096x14336,6144x4096,4096x4096,14336x4096}
  rows=${HONE_RING_ROWS:-1,2,4,8,16,32}
  formats=${HONE_RING_FORMATS:-4x64,4x128,8x64}
  # Cold scales and biases, and a ceiling of all three arrays: issue 13's measure (the loads-only
  # ceiling of words, scales and biases), as a model step reads them.
  "$BUILD/bench/qmv_affine_harness" --no-check --cold-params --shapes "$shapes" --rows "$rows" \
    --formats "$formats" --csv "$out/table.csv" >"$out/table.log" 2>&1
  step "table ($(( $(date +%s) - t0 )) s)" $?
  cat "$out/table.log"
fi

if want gemv; then
  t0=$(date +%s)
  "$BUILD/bench/gemv_bf16_harness" --no-check --shapes "${HONE_RING_SHAPES:-28672x4096,4096x14336,14336x4096,4096x4096}" \
    --rows "${HONE_RING_ROWS:-1,2,4,8,16,32}" --csv "$out/gemv.csv" >"$out/gemv.log" 2>&1
  step "gemv ($(( $(date +%s) - t0 )) s)" $?
  tail -n 40 "$out/gemv.log"
fi

printf 'weight_ring: %s\n' "${status[@]}"

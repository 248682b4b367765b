#!/usr/bin/env bash
# One call on the GPU machine: build (or reuse a carried build), run the device tests, run
# the kernel tests under compute-sanitizer (memcheck, racecheck) on a reduced shape set, and
# run the gemv.bf16 benchmark matrix; the benchmark's compact table is printed last.
#
#   scripts/gpu_check.sh                       # full matrix
#   HONE_BENCH_ARGS=--quick scripts/gpu_check.sh
#
# Environment:
#   HONE_BUILD_DIR   build directory (default build-cuda); reused without rebuilding when it
#                    already holds the built test programs (a build carried to the machine)
#   HONE_BENCH_ARGS  extra arguments for bench gemv_bf16_matrix (e.g. --quick)
#   HONE_SANITIZE    0 skips the compute-sanitizer runs
#   OUT              where logs and the benchmark JSON go (default $HONE_BUILD_DIR/gpu_check)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${HONE_BUILD_DIR:-build-cuda}
out=${OUT:-$build/gpu_check}
mkdir -p "$out"
status=()
step() { # step NAME RC
  status+=("$1: $([ "$2" -eq 0 ] && echo ok || echo "FAILED (rc $2)")")
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# --- build --------------------------------------------------------------------------------
if [ -x "$build/tests/device/cuda_backend_test" ] && [ -x "$build/bench/gemv_bf16_matrix" ]; then
  echo "gpu_check: using the built programs in $build"
  # ctest files name the directory the build was configured in; point that path here.
  configured=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
  if [ -n "$configured" ] && [ "$configured" != "$root/$build" ] && [ ! -e "$configured" ]; then
    mkdir -p "$(dirname "$configured")" && ln -s "$root/$build" "$configured"
    echo "gpu_check: linked $configured -> $root/$build"
  fi
  step build 0
else
  t0=$(date +%s)
  cmake -S . -B "$build" -G Ninja -DHONE_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release \
    >"$out/configure.log" 2>&1 && ninja -C "$build" >"$out/build.log" 2>&1
  rc=$?
  step "build ($(( $(date +%s) - t0 )) s)" $rc
  if [ $rc -ne 0 ]; then
    tail -n 40 "$out/configure.log" "$out/build.log"
    printf '%s\n' "${status[@]}"
    exit 1
  fi
fi

# cuBLASLt is linked dynamically; find it where the image keeps it when the loader does not.
bench="$build/bench/gemv_bf16_matrix"
if ldd "$bench" | grep -q 'libcublasLt.*not found'; then
  lib=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.*' -print -quit 2>/dev/null)
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu_check: libcublasLt from ${lib:-nowhere}"
fi

# --- device tests ---------------------------------------------------------------------------
t0=$(date +%s)
ctest --test-dir "$build" -L device --output-on-failure --timeout 600 >"$out/ctest.log" 2>&1
rc=$?
step "ctest -L device ($(( $(date +%s) - t0 )) s)" $rc
grep -E '^[0-9]+% tests passed|tests failed|\*\*\*Failed|Skipped|Not Run' "$out/ctest.log" | head -n 20
grep -hE '^(device|read bandwidth|tuned|[0-9]+ configs)' "$build"/Testing/Temporary/LastTest.log \
  2>/dev/null | head -n 8

# --- compute-sanitizer on a reduced shape set -------------------------------------------------
if [ "${HONE_SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    t0=$(date +%s)
    rc=0
    for prog in gemv_bf16_op_test gemv_bf16_kernel_test; do
      [ -x "$build/tests/device/$prog" ] || continue
      filter='*'
      [ "$prog" = gemv_bf16_op_test ] && filter='*EveryTactic*:*BatchInvariant*'
      HONE_DEVICE_TEST_REDUCED=1 timeout 40 compute-sanitizer --tool "$tool" --error-exitcode 86 \
        "$build/tests/device/$prog" --gtest_filter="$filter" >"$out/$tool-$prog.log" 2>&1
      r=$?
      [ $r -ne 0 ] && rc=$r && tail -n 30 "$out/$tool-$prog.log"
    done
    step "compute-sanitizer $tool ($(( $(date +%s) - t0 )) s)" $rc
  done
else
  step "compute-sanitizer (skipped)" 0
fi

# --- benchmark matrix -------------------------------------------------------------------------
t0=$(date +%s)
# shellcheck disable=SC2086 # HONE_BENCH_ARGS is a list of arguments
"$bench" --json "$out/gemv_bf16_matrix.json" ${HONE_BENCH_ARGS:-} >"$out/bench.log" 2>"$out/bench.err"
rc=$?
step "bench gemv_bf16_matrix ($(( $(date +%s) - t0 )) s)" $rc
[ $rc -ne 0 ] && tail -n 20 "$out/bench.err"

echo
printf 'gpu_check: %s\n' "${status[@]}"
echo
sed -n '/^device:/,/^method:/p' "$out/bench.log"
sed -n '/^| N |/,$p' "$out/bench.log"
for s in "${status[@]}"; do
  case $s in *FAILED*) exit 1 ;; esac
done
exit 0

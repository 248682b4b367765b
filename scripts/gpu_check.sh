#!/usr/bin/env bash
# One call on the GPU machine: build (or reuse a carried build), run the device tests, run
# the op and kernel tests under compute-sanitizer (memcheck, racecheck) on a reduced shape
# set, and run the benchmark matrices of the ops (bench/op_matrix over bench/shapes/<op>.txt:
# default, tuned pick and every registered peer, e.g. cuBLASLt); the compact tables are printed
# last.
#
#   scripts/gpu_check.sh                                   # everything, full matrices
#   HONE_BENCH_ARGS="--set quick" scripts/gpu_check.sh     # the quick sets
#   HONE_TESTS=0 HONE_BENCHES=qmv.affine scripts/gpu_check.sh   # one op's matrix only
#
# Environment:
#   HONE_BUILD_DIR       build directory (default build-cuda). A build configured in this very
#                        directory is brought up to date incrementally; a build carried from
#                        elsewhere is reused as it is when it holds every program run here
#   HONE_TESTS           0 skips ctest and compute-sanitizer
#   HONE_CTEST           0 skips ctest only (compute-sanitizer still runs)
#   HONE_SANITIZE        0 skips the compute-sanitizer runs
#   HONE_BENCHES         op matrices and programs to run, space-separated (default: gemv.bf16
#                        qmv.affine read_ceiling; empty runs none). An op name runs
#                        bench/op_matrix --op NAME; read_ceiling times loads-only reads of the
#                        matrices' weight sizes: the ceiling each kernel's bandwidth fraction
#                        is read against
#   HONE_CEILING_ARGS    extra arguments for read_ceiling (e.g. --shapes 14336x8192)
#   HONE_BENCH_ARGS      extra arguments for every op_matrix run (e.g. --set quick)
#   HONE_PEERS           bench/peers scripts to run (default: qmv_affine_torch; empty runs
#                        none); each writes <peer>.json and <peer>.md under OUT
#   HONE_PEER_ARGS       extra arguments for them (e.g. --rows 1,16 --formats 4:128)
#   OUT                  where the kept results go (default $HONE_BUILD_DIR/gpu_check): at
#                        most eleven files -- ctest.log, sanitizer.log, <bench>.log and
#                        <bench>.json per benchmark (<op>.log/.json for an op matrix), <peer>.json and <peer>.md, build.log when
#                        the build fails. Scratch
#                        logs stay in $HONE_BUILD_DIR/gpu_check_logs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
build=${HONE_BUILD_DIR:-build-cuda}
out=${OUT:-$build/gpu_check}
logs=$build/gpu_check_logs
benches=${HONE_BENCHES-gemv.bf16 qmv.affine read_ceiling}
mkdir -p "$out" "$logs"
status=()
step() { # step NAME RC
  status+=("$1: $([ "$2" -eq 0 ] && echo ok || echo "FAILED (rc $2)")")
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# --- build --------------------------------------------------------------------------------
programs=(tests/device/cuda_backend_test tests/device/qmv_affine_op_test
          bench/op_matrix bench/read_ceiling)
have_programs=1
for p in "${programs[@]}"; do [ -x "$build/$p" ] || have_programs=0; done
configured=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ "$have_programs" = 1 ] && [ -n "$configured" ] && [ "$configured" != "$root/$build" ]; then
  echo "gpu_check: using the built programs in $build (configured in $configured)"
  # ctest files name the directory the build was configured in; point that path here.
  if [ ! -e "$configured" ]; then
    mkdir -p "$(dirname "$configured")" && ln -s "$root/$build" "$configured"
    echo "gpu_check: linked $configured -> $root/$build"
  fi
  step build 0
else
  t0=$(date +%s)
  if [ "$configured" = "$root/$build" ]; then
    ninja -C "$build" >"$logs/build.log" 2>&1
  else
    # A cache configured in another directory (a carried build lacking a program) cannot be
    # reconfigured here; start it afresh.
    [ -n "$configured" ] && rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
    cmake -S . -B "$build" -G Ninja -DHONE_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release \
      >"$logs/build.log" 2>&1 && ninja -C "$build" >>"$logs/build.log" 2>&1
  fi
  rc=$?
  step "build ($(( $(date +%s) - t0 )) s)" $rc
  if [ $rc -ne 0 ]; then
    cp "$logs/build.log" "$out/build.log"
    tail -n 40 "$logs/build.log"
    printf '%s\n' "${status[@]}"
    exit 1
  fi
fi

# cuBLASLt is linked dynamically; find it where the image keeps it when the loader does not.
if ldd "$build/bench/op_matrix" | grep -q 'libcublasLt.*not found'; then
  lib=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.*' -print -quit 2>/dev/null)
  if [ -n "$lib" ]; then
    LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
  fi
  echo "gpu_check: libcublasLt from ${lib:-nowhere}"
fi

if [ "${HONE_TESTS:-1}" != 0 ]; then
  # --- device tests -------------------------------------------------------------------------
  # One test program at a time: tests that read the tuning cache and tests that tune must not
  # share it at once.
  t0=$(date +%s)
  if [ "${HONE_CTEST:-1}" != 0 ]; then
    ctest --test-dir "$build" -L device --output-on-failure --timeout 600 >"$out/ctest.log" 2>&1
    rc=$?
  else
    echo "ctest skipped (HONE_CTEST=0)" >"$out/ctest.log"
    rc=0
  fi
  step "ctest -L device ($(( $(date +%s) - t0 )) s)" $rc
  grep -E '^[0-9]+% tests passed|tests failed|\*\*\*Failed|Skipped|Not Run' "$out/ctest.log" |
    head -n 20
  grep -hE '^(device|read bandwidth|tuned|[0-9]+ configs|bits=[0-9]+: )' \
    "$build"/Testing/Temporary/LastTest.log 2>/dev/null | head -n 10

  # --- compute-sanitizer on a reduced shape set -----------------------------------------------
  if [ "${HONE_SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
    : >"$out/sanitizer.log"
    for tool in memcheck racecheck; do
      t0=$(date +%s)
      rc=0
      for prog in gemv_bf16_op_test gemv_bf16_kernel_test qmv_affine_op_test \
        qmv_affine_kernel_test decode_paged_op_test qmm_affine_op_test; do
        [ -x "$build/tests/device/$prog" ] || continue
        filter='*'
        limit=40 # [seconds]
        case $prog in
        gemv_bf16_op_test) filter='*EveryTactic*:*BatchInvariant*' ;;
        qmv_affine_op_test)
          filter='*EveryTactic*:*DefaultIsBatchInvariant*:*Dequantization*'
          limit=120
          ;;
        qmv_affine_kernel_test) limit=120 ;;
        decode_paged_op_test)
          filter='DecodePagedOpTest.EveryCandidate*:DecodePagedOpTest.Merges*:DecodePagedOpTest.Sharp*'
          limit=240
          ;;
        qmm_affine_op_test)
          filter='QmmAffineOpTest.EveryCompiledTactic*:QmmAffineOpTest.Unwritten*'
          limit=240
          ;;
        esac
        log="$logs/$tool-$prog.log"
        HONE_DEVICE_TEST_REDUCED=1 timeout $limit compute-sanitizer --tool "$tool" \
          --error-exitcode 86 "$build/tests/device/$prog" --gtest_filter="$filter" >"$log" 2>&1
        r=$?
        # One line per run in the kept log, the tail of a failing one after it.
        summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1)
        echo "$tool $prog: rc $r; ${summary:-no summary}" >>"$out/sanitizer.log"
        if [ $r -ne 0 ]; then
          rc=$r
          tail -n 30 "$log" | tee -a "$out/sanitizer.log"
        fi
      done
      step "compute-sanitizer $tool ($(( $(date +%s) - t0 )) s)" $rc
    done
  else
    step "compute-sanitizer (skipped)" 0
  fi
fi

# --- benchmark matrices -------------------------------------------------------------------------
for bench in $benches; do
  case $bench in
  read_ceiling) program=("$build/bench/read_ceiling") args=${HONE_CEILING_ARGS:-} ;;
  *) program=("$build/bench/op_matrix" --op "$bench") args=${HONE_BENCH_ARGS:-} ;;
  esac
  t0=$(date +%s)
  # shellcheck disable=SC2086 # args is a list of arguments
  "${program[@]}" --json "$out/$bench.json" $args >"$logs/$bench.out" 2>"$logs/$bench.err"
  rc=$?
  step "bench $bench ($(( $(date +%s) - t0 )) s)" $rc
  [ $rc -ne 0 ] && tail -n 20 "$logs/$bench.err"
  { cat "$logs/$bench.out"; [ -s "$logs/$bench.err" ] && echo "--- stderr" &&
      cat "$logs/$bench.err"; } >"$out/$bench.log"
done

# --- framework peers (Python, same process as hone through the package) ----------------------
# Fractions of read bandwidth use the C++ probe's figure of this run where a benchmark ran.
bw=$(sed -n 's/.*measured read bandwidth \([0-9][0-9]*\) GB\/s.*/\1/p' "$logs"/*.out 2>/dev/null |
  head -n 1)
for peer in ${HONE_PEERS-qmv_affine_torch}; do
  t0=$(date +%s)
  # shellcheck disable=SC2086 # HONE_PEER_ARGS is a list of arguments
  HONE_LIBRARY="$build/lib/libhone.so" PYTHONPATH=python \
    python3 "bench/peers/$peer.py" --out "$out" ${bw:+--read-bandwidth "$bw"} \
    ${HONE_PEER_ARGS:-} >"$logs/$peer.out" 2>&1
  rc=$?
  step "peer $peer ($(( $(date +%s) - t0 )) s)" $rc
  [ $rc -ne 0 ] && tail -n 20 "$logs/$peer.out"
done

echo
printf 'gpu_check: %s\n' "${status[@]}"
for bench in $benches; do
  [ -f "$logs/$bench.out" ] || continue
  echo
  echo "== $bench"
  sed -n '/^device:/,/^method:/p' "$logs/$bench.out"
  sed -n '/^| \(N\|shape\) |/,$p' "$logs/$bench.out"
done
for peer in ${HONE_PEERS-qmv_affine_torch}; do
  [ -f "$out/$peer.md" ] || continue
  echo
  echo "== $peer"
  cat "$out/$peer.md"
done
for s in "${status[@]}"; do
  case $s in *FAILED*) exit 1 ;; esac
done
exit 0

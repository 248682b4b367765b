#!/usr/bin/env bash
# qmm.affine and quantized_linear on the GPU machine, in one call: build with the full kernel
# set, check every kernel's resources (0 spill bytes) and SASS (HGMMA), run the device tests,
# compute-sanitizer memcheck on a reduced set, tune qmv.affine and qmm.affine for the chart's
# shapes, the benchmark matrices (bench/op_matrix: default, tuned, every candidate in the tune
# report, cuBLASLt BF16 dense), the PyTorch int4 peer, the no-cliff chart, and the acceptance
# checks last.
#
#   scripts/device/qmm_affine.sh OUTDIR [BUILD_DIR] [STEPS]   # BUILD_DIR default build-cuda
#   scripts/device/qmm_affine.sh /tmp/out build-cuda build,tests     # some steps only
#   HONE_QMM_SET=quick scripts/device/qmm_affine.sh /tmp/out          # the quick shape sets
#
# STEPS (comma-separated, default all): build, tests, sanitizer, tune, qmm, linear, torch,
# summary. Each step reads what earlier ones wrote (the tuning cache in BUILD_DIR), so a run
# can be split over several calls of a few minutes each.
# Environment: HONE_QMM_SET (full|quick, default full), HONE_BENCH_SAMPLES (default 7).
# OUTDIR receives at most six files: tests.log (tests, resources, SASS, sanitizer),
# qmm_affine_matrix.json, quantized_linear_matrix.json, qmm_affine_torch.json,
# qmm_affine_torch.md, crossover.png. Scratch logs and the tuning cache of the run go to
# BUILD_DIR/qmm_affine_logs.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [BUILD_DIR] [STEPS]" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=$1
build=${2:-build-cuda}
steps=${3:-build,tests,sanitizer,tune,qmm,linear,torch,summary}
case $out in /*) ;; *) out=$root/$out ;; esac
case $build in /*) ;; *) build=$root/$build ;; esac
logs=$build/qmm_affine_logs
set_name=${HONE_QMM_SET:-full}
samples=${HONE_BENCH_SAMPLES:-7}
mkdir -p "$out" "$logs/cache"
status=()
step() { status+=("$1: $([ "$2" -eq 0 ] && echo ok || echo "FAILED (rc $2)")"); }
want() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }
# Every hone process of the run reads and writes this run's cache, and nothing else.
export HONE_CACHE_DIR=$logs/cache
unset HONE_CACHE HONE_AUTOTUNE HONE_QMM_TILE_M HONE_QMM_TILE_N HONE_QMM_TILE_K HONE_QMV_MAX_ROWS
unset HONE_TACTIC_QMM_AFFINE HONE_TACTIC_QUANTIZED_LINEAR HONE_TACTIC_QMV_AFFINE
export PATH=$PATH:/usr/local/cuda/bin

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# --- build: the full kernel set ---------------------------------------------------------------
if want build; then
  t0=$(date +%s)
  targets=(qmm_affine_op_test quantized_linear_op_test c_api_quantized_linear_bf16_test op_matrix
           qmm_probe hone_tool hone_c)
  {
    if [ ! -d "$root/third_party/cutlass/include/cute" ]; then
      echo "qmm_affine: no CUTLASS headers in third_party/cutlass/include (carry that path, or" \
        "run scripts/bootstrap.sh where PyPI is reachable)"
      false
    fi &&
      cmake -S "$root" -B "$build" -G Ninja -DHONE_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release \
        -DHONE_QMM_TACTICS=full -DHONE_CUDA_PTXAS_VERBOSE=ON &&
      cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
  } >"$logs/build.log" 2>&1
  rc=$?
  step "build ($(( $(date +%s) - t0 )) s)" $rc
  if [ $rc -ne 0 ]; then
    tail -n 40 "$logs/build.log" | tee "$out/tests.log"
    printf 'qmm_affine: %s\n' "${status[@]}"
    exit 1
  fi
fi

# --- kernels: resources (spills) and SASS (HGMMA) of every compiled unit ----------------------
if want tests; then
  : >"$out/tests.log"
  objects=$(find "$build" -path '*hone_qmm_kernels.dir*' -name 'qmm_affine_*_sm90a.cu.o' | sort)
  rc=0
  {
    echo "=== kernels: registers / local memory (spills) / HGMMA count, per unit"
    for o in $objects; do
      unit=$(basename "$o" .cu.o)
      res=$(cuobjdump --dump-resource-usage "$o" 2>&1 | grep -o 'REG:[0-9]*.*LOCAL:[0-9]*' |
        sort -u | tr '\n' ' ')
      hgmma=$(cuobjdump --dump-sass "$o" 2>/dev/null | grep -c 'HGMMA')
      echo "$unit $res HGMMA:$hgmma"
    done
  } >>"$out/tests.log" 2>&1
  grep -q 'LOCAL:[1-9]' "$out/tests.log" && rc=3
  grep -q 'HGMMA:0$' "$out/tests.log" && rc=4
  [ -n "$objects" ] || rc=5
  step "kernels: no spills, HGMMA in every unit" $rc
  grep -E 'spill' "$logs/build.log" 2>/dev/null | grep -v ' 0 bytes spill' | head -n 5

  t0=$(date +%s)
  rc=0
  for t in qmm_affine_op_test quantized_linear_op_test c_api_quantized_linear_bf16_test; do
    echo "=== $t" >>"$out/tests.log"
    timeout 1500 "$build/tests/device/$t" >>"$out/tests.log" 2>&1 || rc=$?
  done
  step "device tests ($(( $(date +%s) - t0 )) s)" $rc
  grep -E '^\[  (PASSED|FAILED) |FAILED TEST|configs compiled|tuned |rows=24:' "$out/tests.log" |
    head -n 30
fi

# --- compute-sanitizer memcheck on a reduced set --------------------------------------------------
if want sanitizer; then
  if command -v compute-sanitizer >/dev/null; then
    t0=$(date +%s)
    rc=0
    echo "=== compute-sanitizer memcheck (HONE_DEVICE_TEST_REDUCED=1)" >>"$out/tests.log"
    for spec in "qmm_affine_op_test:QmmAffineOpTest.EveryCompiledTactic*:QmmAffineOpTest.Unwritten*:QmmAffineOpTest.StreamK*" \
      "quantized_linear_op_test:QuantizedLinearTest.BothSides*"; do
      t=${spec%%:*}
      filter=${spec#*:}
      log="$logs/memcheck_$t.log"
      HONE_DEVICE_TEST_REDUCED=1 timeout 1500 compute-sanitizer --tool memcheck \
        --error-exitcode 86 "$build/tests/device/$t" --gtest_filter="$filter" >"$log" 2>&1
      r=$?
      echo "memcheck $t: rc $r; $(grep 'ERROR SUMMARY' "$log" | tail -n 1)" >>"$out/tests.log"
      [ $r -ne 0 ] && { tail -n 40 "$log" >>"$out/tests.log"; rc=$r; }
    done
    step "compute-sanitizer memcheck ($(( $(date +%s) - t0 )) s)" $rc
  else
    step "compute-sanitizer (not installed; skipped)" 0
  fi
fi

# --- tune: each side's own tactics, which quantized_linear's tune reads from the cache -------------
# The chart's two shapes, every bucket quantized_linear uses up to 256 rows: qmv.affine's and
# qmm.affine's picks are in the cache before op_matrix tunes quantized_linear on them.
if want tune; then
  t0=$(date +%s)
  rows=$(seq 1 32)
  [ "$set_name" = quick ] && rows="1 8 16 24 32"
  rc=0
  : >"$logs/tune.log"
  for nk in "n=4096,k=14336" "n=28672,k=4096"; do
    for r in $rows 64 128 256; do
      for op in qmv.affine qmm.affine; do
        [ "$op" = qmv.affine ] && [ "$r" -gt 32 ] && continue
        "$build/tools/hone/hone" --backend cuda tune --op "$op" \
          --shape "rows=$r,$nk,bits=4,group=64" >>"$logs/tune.log" 2>&1 || rc=$?
      done
    done
  done
  step "tune qmv.affine + qmm.affine for the chart's shapes ($(( $(date +%s) - t0 )) s)" $rc
  [ $rc -ne 0 ] && tail -n 20 "$logs/tune.log"
fi

# --- benchmark matrices ---------------------------------------------------------------------------
if want qmm; then
  t0=$(date +%s)
  "$build/bench/op_matrix" --op qmm.affine --set "$set_name" --samples "$samples" \
    --json "$out/qmm_affine_matrix.json" >"$logs/qmm_affine_matrix.log" 2>&1
  rc=$?
  step "op_matrix qmm.affine ($(( $(date +%s) - t0 )) s)" $rc
  [ $rc -ne 0 ] && tail -n 20 "$logs/qmm_affine_matrix.log"
fi
if want linear; then
  t0=$(date +%s)
  "$build/bench/op_matrix" --op quantized_linear --set "$set_name" --samples "$samples" \
    --also quantized_linear.qmv --also quantized_linear.qmm \
    --json "$out/quantized_linear_matrix.json" >"$logs/quantized_linear_matrix.log" 2>&1
  rc=$?
  step "op_matrix quantized_linear ($(( $(date +%s) - t0 )) s)" $rc
  [ $rc -ne 0 ] && tail -n 20 "$logs/quantized_linear_matrix.log"
fi

# --- peer: torch._weight_int4pack_mm, hone at its tuned pick ---------------------------------------
if want torch; then
  t0=$(date +%s)
  peer_rows=""
  [ "$set_name" = quick ] && peer_rows="--rows 2048 --matrices 4096x4096,28672x4096"
  HONE_LIBRARY="$build/lib/libhone.so" PYTHONPATH="$root/python" \
    python3 "$root/bench/peers/qmm_affine_torch.py" --out "$out" --samples "$samples" \
    $peer_rows >"$logs/peer.log" 2>&1
  rc=$?
  step "peer qmm_affine_torch ($(( $(date +%s) - t0 )) s)" $rc
  [ $rc -ne 0 ] && tail -n 20 "$logs/peer.log"
fi

# --- summary: the compact tables and the acceptance checks -----------------------------------------
echo
printf 'qmm_affine: %s\n' "${status[@]}"
if want summary && [ -f "$out/quantized_linear_matrix.json" ]; then
  echo
  grep -E '^\||^geomean' "$logs/qmm_affine_matrix.log" 2>/dev/null
  [ -f "$out/qmm_affine_torch.md" ] && grep -E '^\| [0-9]|geometric' "$out/qmm_affine_torch.md"
  echo
  args=(--linear "$out/quantized_linear_matrix.json" --png "$out/crossover.png")
  [ -f "$out/qmm_affine_matrix.json" ] && args+=(--qmm "$out/qmm_affine_matrix.json")
  [ -f "$out/qmm_affine_torch.json" ] && args+=(--torch "$out/qmm_affine_torch.json")
  python3 "$root/scripts/plot_crossover.py" "${args[@]}" || status+=("acceptance: FAILED")
fi
for s in "${status[@]}"; do
  case $s in *FAILED*) exit 1 ;; esac
done
exit 0

#!/usr/bin/env bash
# The tuning store, settings and CLI/cache defects of issue 10 on the GPU machine, in one call:
# build, the host tests (unit, CLI, Python), the device tests of this piece, then the same
# defects through the CUDA backend end to end -- `hone` on gemv.bf16 and qmv.affine, and the
# Python entry point over torch tensors (the real path that used to fail at launch with
# cudaErrorInvalidValue) -- and a summary table last.
#
#   scripts/device/cache_cli.sh OUTDIR [BUILD_DIR]      # BUILD_DIR default build-cuda
#
# OUTDIR receives tests.log (every step's output) and summary.txt (the table printed last).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [BUILD_DIR]" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=$1
build=${2:-build-cuda}
case $out in /*) ;; *) out=$root/$out ;; esac
case $build in /*) ;; *) build=$root/$build ;; esac
mkdir -p "$out"
log=$out/tests.log
: >"$log"
export PATH=$PATH:/usr/local/cuda/bin
unset HONE_CACHE HONE_AUTOTUNE HONE_TACTIC_GEMV_BF16 HONE_TACTIC_CUDA_GEMV_BF16 \
  HONE_TACTIC_QMV_AFFINE HONE_TACTIC_CUDA_QMV_AFFINE
results=()
# record NAME RC: one row of the summary.
record() { results+=("$(printf '%-58s %s' "$1" "$([ "$2" -eq 0 ] && echo ok || echo "FAILED (rc $2)")")"); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
  sed 's/^/gpu: /' | tee -a "$log"

# --- build ------------------------------------------------------------------------------------
t0=$(date +%s)
{
  cmake -S "$root" -B "$build" -G Ninja -DHONE_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$build" -j "$(nproc)"
} >>"$log" 2>&1
rc=$?
record "build ($(($(date +%s) - t0)) s)" $rc
if [ $rc -ne 0 ]; then
  tail -n 40 "$log"
  printf '%s\n' "${results[@]}" | tee "$out/summary.txt"
  exit 1
fi
hone=$build/tools/hone/hone

# --- host tests: unit, CLI, Python (cpu backend) ---------------------------------------------
ctest --test-dir "$build" -L 'unit|cli|python|example' -j 8 --output-on-failure >>"$log" 2>&1
record "ctest unit, cli, python, example" $?

# --- device tests of this piece ---------------------------------------------------------------
ctest --test-dir "$build" -L device --output-on-failure \
  -R 'CudaCompiledTactics|CudaTuningStore|CApiGemvBf16|CApiQmvAffineBf16|TuneEndToEnd|CudaBackend' \
  >>"$log" 2>&1
record "device tests (tuning store, C API, tune end to end)" $?

# --- the defects through the CUDA backend -----------------------------------------------------
export HONE_CACHE_DIR=$build/cache_cli_logs/cache
rm -rf "$HONE_CACHE_DIR"
mkdir -p "$HONE_CACHE_DIR"
cache_file=$HONE_CACHE_DIR/tuning-cache.json
# expect NAME RC PATTERN CMD...: CMD exits RC with PATTERN (ERE) in its stdout or stderr.
expect() {
  local name=$1 want=$2 pattern=$3
  shift 3
  echo "\$ $*" >>"$log"
  "$@" >"$out/.stdout" 2>"$out/.stderr"
  local rc=$?
  cat "$out/.stdout" "$out/.stderr" >>"$log"
  local ok=0
  [ "$rc" -eq "$want" ] || ok=1
  [ -z "$pattern" ] || cat "$out/.stdout" "$out/.stderr" | grep -Eq -- "$pattern" || ok=1
  [ $ok -eq 0 ] || echo "FAILED: $name: exit $rc (expected $want), pattern /$pattern/" >>"$log"
  record "$name" $ok
}
# A config of valid spelling that no CTA shape compiles (3 warps).
uncompiled() { sed -E 's/([,:])warps=[0-9]+/\1warps=3/' <<<"$1"; }
python_gemv() {
  HONE_LIBRARY=$build/lib/libhone.so PYTHONPATH=$root/python python3 - <<'PY'
import hone, torch
x = torch.randn(4, 2048, device="cuda", dtype=torch.bfloat16)
w = torch.randn(1024, 2048, device="cuda", dtype=torch.bfloat16)
y = hone.ops.gemv_bf16(x, w)
torch.cuda.synchronize()
err = ((y.float() - x.float() @ w.float().t()).norm() / (x.float() @ w.float().t()).norm()).item()
print("python gemv_bf16 relative L2 error %.2e" % err)
assert err < 8e-3
PY
}

for op_shape in "gemv.bf16 rows=4,n=1024,k=2048" "qmv.affine rows=4,n=1024,k=2048,bits=4,group=64"; do
  op=${op_shape% *} shape=${op_shape#* }
  rm -f "$cache_file" # one entry at a time: the one planted below
  expect "$op: tune" 0 "^tuned 1, cached 0" "$hone" --backend cuda tune --op "$op" --shape "$shape" --samples 5
  tactic=$(grep -o '"tactic": *"[^"]*"' "$cache_file" | head -n 1 | sed -E 's/.*"([^"]*)"$/\1/')
  bad=$(uncompiled "$tactic")
  sed -i "s|\"tactic\": *\"$tactic\"|\"tactic\": \"$bad\"|" "$cache_file"
  expect "$op: verify reports a config not compiled in" 1 "^unrunnable +$op@" "$hone" cache verify
  expect "$op: bench ignores it" 0 "this build cannot run; ignoring it" \
    "$hone" --backend cuda bench --op "$op" --shape "$shape" --samples 5
  if [ "$op" = gemv.bf16 ] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    expect "$op: Python entry point runs the default over it" 0 "relative L2 error" python_gemv
  fi
  expect "$op: tune re-tunes it" 0 "re-tuning $op" "$hone" --backend cuda tune --op "$op" --shape "$shape" --samples 5
  expect "$op: verify is clean again" 0 "^clean" "$hone" cache verify
  var=HONE_TACTIC_CUDA_$(tr 'a-z.' 'A-Z_' <<<"$op")
  expect "$op: $var not compiled in: tune exits 2" 2 "$var" \
    env "$var=$bad" "$hone" --backend cuda tune --op "$op" --shape "$shape" --samples 5
  expect "$op: $var not compiled in: bench exits 2" 2 "$var" \
    env "$var=$bad" "$hone" --backend cuda bench --op "$op" --shape "$shape" --samples 5
done
expect "gemv.bf16: a shape too large for the device exits 2" 2 "needs [0-9]+ bytes .* has [0-9]+ bytes" \
  "$hone" --backend cuda tune --op gemv.bf16 --shape rows=1,n=16777216,k=16777216
expect "qmv.affine: a shape too large for the device exits 2" 2 "needs [0-9]+ bytes .* has [0-9]+ bytes" \
  "$hone" --backend cuda bench --op qmv.affine --shape rows=1,n=16777216,k=16777216,bits=8,group=64
rm -f "$out/.stdout" "$out/.stderr"

# --- summary ----------------------------------------------------------------------------------
failed=$(printf '%s\n' "${results[@]}" | grep -c FAILED)
{
  echo "cache_cli: ${#results[@]} checks, $failed failed (details in $log)"
  printf '%s\n' "${results[@]}"
} | tee "$out/summary.txt"
[ "$failed" -eq 0 ]

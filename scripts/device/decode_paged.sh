#!/usr/bin/env bash
# decode.paged on the GPU machine, in one call: build what it needs, run its tests (unit,
# device, C API), compute-sanitizer memcheck, racecheck and synccheck on a reduced test set,
# the acceptance benchmark (default, every kv_chunk candidate, unsplit, the separate merge
# kernel, kv_heads 2/4/8) and the PyTorch SDPA peer (with hone's tuned pick), then print a
# compact table with the acceptance checks last.
#
#   scripts/device/decode_paged.sh OUTDIR [BUILD_DIR]      # BUILD_DIR default build-cuda
#   HONE_DECODE_CONFIGS=1x4k,ragged16 scripts/device/decode_paged.sh /tmp/out   # a subset
#
# Environment: HONE_DECODE_CONFIGS (comma-separated config names, default all),
# HONE_READ_BANDWIDTH (GB/s; default the bench's probe), HONE_SANITIZE=0 (skip the sanitizer),
# HONE_BENCH_SAMPLES (default 9).
# OUTDIR receives at most six files: tests.log, sanitizer.log, bench.log,
# decode_paged_bench.json, decode_paged_torch.json, decode_paged_torch.md. Scratch logs and the
# tuning cache of the run go to BUILD_DIR/decode_paged_logs.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [BUILD_DIR]" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=$1
build=${2:-build-cuda}
case $out in /*) ;; *) out=$root/$out ;; esac
case $build in /*) ;; *) build=$root/$build ;; esac
logs=$build/decode_paged_logs
mkdir -p "$out" "$logs"
status=()
step() { status+=("$1: $([ "$2" -eq 0 ] && echo ok || echo "FAILED (rc $2)")"); }
configs=${HONE_DECODE_CONFIGS:-}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# --- build --------------------------------------------------------------------------------------
targets=(cuda_decode_paged_plan_test decode_paged_op_test c_api_decode_paged_bf16_test
         decode_paged_bench hone_c)
t0=$(date +%s)
{
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DHONE_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release
  fi &&
    cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
} >"$logs/build.log" 2>&1
rc=$?
step "build ($(( $(date +%s) - t0 )) s)" $rc
if [ $rc -ne 0 ]; then
  tail -n 40 "$logs/build.log" | tee "$out/tests.log"
  printf '%s\n' "${status[@]}"
  exit 1
fi

# --- tests ----------------------------------------------------------------------------------------
t0=$(date +%s)
rc=0
: >"$out/tests.log"
for t in tests/unit/cuda_decode_paged_plan_test tests/device/decode_paged_op_test \
  tests/device/c_api_decode_paged_bf16_test; do
  echo "=== $t" >>"$out/tests.log"
  timeout 1200 "$build/$t" >>"$out/tests.log" 2>&1 || rc=$?
done
# Registers and spills of every kernel, from ptxas (0 spill bytes expected everywhere).
echo "=== ptxas -v src/cuda/kernels/decode_paged/decode_paged.cu (sm_90)" >>"$out/tests.log"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -std=c++20 -O3 -lineinfo -gencode=arch=compute_90,code=sm_90 -Xptxas -v -I"$root/include" \
  -I"$root/src" -c "$root/src/cuda/kernels/decode_paged/decode_paged.cu" -o "$logs/ptxas.o" 2>&1 |
  grep -E "Compiling entry|registers|spill" | sed -e 's/ptxas info *: //' >>"$out/tests.log"
grep -q "[1-9][0-9]* bytes spill" "$out/tests.log" && rc=3
step "tests ($(( $(date +%s) - t0 )) s)" $rc
grep -E '^\[  (PASSED|FAILED) |FAILED TEST|^head_dim|worst relative|tuned ' "$out/tests.log" |
  head -n 30

# --- compute-sanitizer on a reduced set -----------------------------------------------------------
if [ "${HONE_SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
  : >"$out/sanitizer.log"
  filter='DecodePagedOpTest.EveryCandidate*:DecodePagedOpTest.Merges*:DecodePagedOpTest.Sharp*'
  filter+=':DecodePagedEntryTest.CheckPages*:DecodePagedEntryTest.PlanAndRun*'
  filter+=':DecodePagedOpTest.FusedMerge*:DecodePagedOpTest.KvHeads*'
  filter+=':DecodePagedEntryTest.GraphReplays*'
  for tool in memcheck racecheck synccheck; do
    t0=$(date +%s)
    log="$logs/$tool.log"
    HONE_DEVICE_TEST_REDUCED=1 timeout 900 compute-sanitizer --tool "$tool" --error-exitcode 86 \
      "$build/tests/device/decode_paged_op_test" --gtest_filter="$filter" >"$log" 2>&1
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1)
    echo "$tool decode_paged_op_test: rc $rc; ${summary:-no summary}" >>"$out/sanitizer.log"
    [ $rc -ne 0 ] && tail -n 40 "$log" >>"$out/sanitizer.log"
    step "compute-sanitizer $tool ($(( $(date +%s) - t0 )) s)" $rc
  done
else
  step "compute-sanitizer (skipped)" 0
fi

# --- benchmark: default, every candidate, unsplit, merge kernel, kv_heads ------------------------
t0=$(date +%s)
"$build/bench/decode_paged_bench" --json "$out/decode_paged_bench.json" \
  --samples "${HONE_BENCH_SAMPLES:-9}" ${configs:+--configs "$configs"} \
  ${HONE_READ_BANDWIDTH:+--read-bandwidth "$HONE_READ_BANDWIDTH"} >"$out/bench.log" 2>&1
rc=$?
step "decode_paged_bench ($(( $(date +%s) - t0 )) s)" $rc
bw=${HONE_READ_BANDWIDTH:-$(python3 -c 'import json,sys
print(round(json.load(open(sys.argv[1]))["read_bandwidth"] / 1e9))' \
  "$out/decode_paged_bench.json" 2>/dev/null)}

# --- peer: PyTorch SDPA, hone at its tuned pick ---------------------------------------------------
t0=$(date +%s)
rm -rf "$logs/cache" && mkdir -p "$logs/cache"
env -u HONE_DECODE_KV_CHUNK -u HONE_TACTIC_DECODE_PAGED -u HONE_CHECK_PAGES -u HONE_CACHE \
  HONE_CACHE_DIR="$logs/cache" HONE_LIBRARY="$build/lib/libhone.so" PYTHONPATH="$root/python" \
  python3 bench/peers/decode_paged_torch.py --out "$out" --tune ${configs:+--configs "$configs"} \
  ${bw:+--read-bandwidth "$bw"} >"$logs/peer.log" 2>&1
rc=$?
step "peer decode_paged_torch ($(( $(date +%s) - t0 )) s)" $rc
[ $rc -ne 0 ] && tail -n 20 "$logs/peer.log"

# --- summary -------------------------------------------------------------------------------------
echo
printf 'decode_paged: %s\n' "${status[@]}"
echo
python3 - "$out/decode_paged_bench.json" "$out/decode_paged_torch.json" <<'EOF'
import json, os, sys

def load(path):
    return json.load(open(path)) if os.path.exists(path) else {"results": []}

bench, peer = load(sys.argv[1]), load(sys.argv[2])
bw = bench.get("read_bandwidth") or peer.get("read_bandwidth") or 0
sdpa = {r["config"]: r for r in peer["results"]}
print("read bandwidth %.0f GB/s; frac = KV bytes / t / read bandwidth" % (bw / 1e9))
print("| config | KV MB | tuned us (frac) | tactic | default us (frac) | unsplit us (frac) "
      "| SDPA us (peer) | tuned/default | unsplit/tuned | hone vs SDPA | fused merge us "
      "| kv_heads us (frac) | kv_heads tactic | kv_heads vs SDPA |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
checks = []
for r in bench["results"]:
    if "error" in r:
        print("| %s | FAILED: %s |" % (r["config"], r["error"]))
        checks.append((r["config"], "benchmark ran", False))
        continue
    t, d, u = r["tuned"], r["default"], r["unsplit"]
    p = sdpa.get(r["config"])
    cell = "%.2f (%s)" % (p["sdpa_s"] * 1e6, p["peer"]) if p else "-"
    vs = p["speedup"] if p else None
    mk, kh = r.get("fused_merge"), r.get("kv_heads")
    # kv_heads against SDPA: the peer's SDPA time over the bench's kv_heads time (two programs).
    kh_vs = p["sdpa_s"] / kh["median_s"] if p and kh else None
    print("| %s | %.1f | %.2f (%.2f) | %s | %.2f (%.2f) | %.2f (%.2f) | %s | %.2f | %.2f | %s "
          "| %s | %s | %s | %s |" % (
        r["config"], r["kv_bytes"] / 1e6, t["median_s"] * 1e6, t["read_fraction"], t["tactic"],
        d["median_s"] * 1e6, d["read_fraction"], u["median_s"] * 1e6, u["read_fraction"], cell,
        d["median_s"] / t["median_s"], u["median_s"] / t["median_s"],
        "%.2f" % vs if vs else "-",
        "%.2f" % (mk["median_s"] * 1e6) if mk else "-",
        "%.2f (%.2f)" % (kh["median_s"] * 1e6, kh["read_fraction"]) if kh else "-",
        kh["tactic"] if kh else "-", "%.2f" % kh_vs if kh_vs else "-"))
    tokens = sum(r["lengths"])
    name = r["config"]
    if tokens >= 65536:
        checks.append((name, "tuned KV read >= 0.85 of bandwidth (%.2f)" % t["read_fraction"],
                       t["read_fraction"] >= 0.85))
    if r["batch"] == 1 and 4096 <= tokens <= 32768:
        checks.append((name, "tuned >= 1.5x unsplit (%.2f)" % (u["median_s"] / t["median_s"]),
                       u["median_s"] / t["median_s"] >= 1.5))
        if vs:
            checks.append((name, "hone >= 1.5x SDPA (%.2f)" % vs, vs >= 1.5))
    if vs:
        need = 1.3 if p["peer"] == "sdpa.padded" else 1.0
        checks.append((name, "hone >= %.1fx %s (%.2f)" % (need, p["peer"], vs), vs >= need))
print()
for name, what, ok in checks:
    print("%-4s %-18s %s" % ("ok" if ok else "MISS", name, what))
print("\nacceptance: %d of %d checks met" % (sum(ok for _, _, ok in checks), len(checks)))
EOF
for s in "${status[@]}"; do
  case $s in *FAILED*) exit 1 ;; esac
done
exit 0

#!/usr/bin/env bash
# One call (~7 min): the cp.async ring's staged group parameters (the STAGE twins of the int4
# one-tile cp.async kernels). The kernel test (the staged tests now require staged cp.async
# configs among those checked) and the op test on reduced shapes; the same kernel test built with
# the ring's twin reading the other chunk of each staged pair (broken_kernel_test: it must fail);
# compute-sanitizer memcheck and racecheck of the staged tests; then the harness on the four
# Llama-3.1-8B int4 g64 linears at rows 1, 4, 8, 16 with --staging off, on and auto in turn,
# twice (one build: every cp.async config staged against itself unstaged).
#
#   tar xJf .carry/call2.tar.xz && scripts/device/call_staged_ring.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin staged_ring 560 "${1:?OUTDIR}" build
cat "$R/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
done
if [ -x ./broken_kernel_test ]; then
  timeout "$(cap 60)" ./broken_kernel_test --gtest_filter='*Stag*' >"$R/broken.log" 2>&1
  stamp "broken staging (must fail)" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/broken.log" | head -4
fi
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  HONE_TEST_PATHS=mma timeout "$(cap 100)" "$CS" --tool $tool --error-exitcode 9 \
    "$BUILD/tests/device/qmv_affine_kernel_test" --gtest_filter='*Stag*' >"$R/$tool.log" 2>&1
  stamp "$tool staged" $?
  grep -hE '^\[  (PASSED|FAILED) |ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$R/$tool.log" | head -4
done
pack
for round in 1 2; do
  for mode in off on auto; do
    HONE_TEST_PATHS=mma timeout "$(cap 60)" "$BUILD/bench/qmv_affine_harness" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16 --formats 4x64 \
      --staging $mode --csv "$R/ab_${mode}_$round.csv" >"$R/ab_${mode}_$round.log" 2>&1
    stamp "harness staging $mode round $round" $?
  done
done
pack
python3 - "$R" <<'PY'
import sys, math
R = sys.argv[1]
def load(path):  # the candidate column holds commas
    out = {}
    for line in open(path).read().splitlines()[1:]:
        f = line.split(",")
        out[(f[2], f[3], f[4], ",".join(f[5:-2]))] = float(f[-2])
    return out
t = {m: [load(f"{R}/ab_{m}_{r}.csv") for r in (1, 2)] for m in ("off", "on", "auto")}
mean = lambda m, k: sum(d[k] for d in t[m]) / 2
for mode in ("on", "auto"):
    for sel, name in ((lambda c: "async=1" in c, "async"), (lambda c: "async=1" not in c, "other")):
        r = sorted((mean(mode, k) / mean("off", k), k) for k in t["off"][0] if sel(k[3]))
        g = math.exp(sum(math.log(x[0]) for x in r) / len(r))
        print(f"{mode}/off {name} cells {len(r)} geomean {g:.3f} min {r[0][0]:.3f} "
              f"max {r[-1][0]:.3f} ({' '.join(r[-1][1][:3])} {r[-1][1][3][12:]})")
for n, k in (("28672", "4096"), ("4096", "14336"), ("6144", "4096"), ("4096", "4096")):
    for rows in ("1", "4", "8", "16"):
        ks = [x for x in t["off"][0] if x[:3] == (n, k, rows)]
        b = {m: min(ks, key=lambda x: mean(m, x)) for m in ("off", "on", "auto")}
        print(n, k, rows, " ".join(f"{m} {mean(m, b[m]):.2f}" for m in b), b["on"][3][12:])
PY

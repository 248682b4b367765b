#!/usr/bin/env bash
# Call 1 (issue 11): qmm.affine's candidates built on 2026-12-04 and never run (stream-K,
# lookahead, 128-deep TMA blocks, the register-A engine's late refill). The carried build of
# 68bbb82. Device tests (stream-K repeatability over a poisoned workspace and graph replays,
# every compiled config against float64 on the reduced shapes, leftovers), memcheck of the
# stream-K and leftover tests, qmm.affine / qmv.affine tunes at 24-256 rows on the four
# Llama-3.1-8B shapes (int4 g64) with every candidate's time, then quantized_linear against
# cuBLASLt BF16 dense. Everything lands in $OUT/results.tar.gz, packed after each step.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 580 - ($(date +%s) - T0) )); }
tar xJf .carry/bin.tar.xz
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache $R/tunes; T=build/tests/device/qmm_affine_op_test; H=build/tools/hone/hone
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
export HONE_CACHE_DIR=$R/cache
timeout 100 $T --gtest_filter='*StreamK*:QmmAffineHostTest.*' > $R/test_streamk.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test_streamk.log
HONE_DEVICE_TEST_REDUCED=1 timeout 150 $T --gtest_filter='*Mma*:*EveryCompiledTactic*' > $R/test.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test.log
grep -hE "FAILED|PASSED|rc=" $R/test_streamk.log $R/test.log | head -20
pack
for r in 24 32 64 48 128 96 256; do
  for nk in "n=28672,k=4096" "n=4096,k=14336" "n=4096,k=4096" "n=6144,k=4096"; do
    [ $(left) -lt 300 ] && break 2
    for op in qmv.affine qmm.affine; do
      [ $op = qmv.affine ] && [ $r -gt 32 ] && continue
      ts=$(date +%s%N); f=$R/tunes/${op}_r${r}_${nk//[=,]/_}.json
      timeout 40 $H --backend cuda tune --op $op --shape "rows=$r,$nk,bits=4,group=64" --json $f >> $R/tune.log 2>&1
      echo "rc=$? $op rows=$r $nk $(( ($(date +%s%N) - ts) / 1000000 )) ms" >> $R/tune.log
    done
  done
done
(cd $R && tar czf tunes.tar.gz tunes && rm -rf tunes)
pack
: > $R/shapes.txt
for nk in "n=4096, k=4096" "n=6144, k=4096" "n=28672, k=4096" "n=4096, k=14336"; do
  echo "quick: rows=1|16|24|32|48|64|96|128|256, $nk, bits=4, group=64" >> $R/shapes.txt
done
timeout $(( $(left) - 75 )) build/bench/op_matrix --op quantized_linear --shapes $R/shapes.txt --set quick --samples 7 \
  --also quantized_linear.qmv --also quantized_linear.qmm --json $R/ql.json > $R/ql.log 2>&1
echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/ql.log
grep -E '^\| rows|geomean' $R/ql.log | cut -c1-200
pack
HONE_DEVICE_TEST_REDUCED=1 timeout $(( $(left) - 5 )) compute-sanitizer --tool memcheck --error-exitcode 86 $T --gtest_filter='*StreamK*:*MmaPathHandlesLeftovers*' > $R/sanitizer_memcheck.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_memcheck.log
tail -n 2 $R/sanitizer_memcheck.log
pack

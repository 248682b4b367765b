#!/usr/bin/env bash
# Call 4: the build of this stop's last kernel change (TMA engine at 9-256 rows, up to 256 weight
# rows per CTA, four shallower rings): the probe on the new TMA kernels, the device tests (every
# compiled config against float64, leftovers in every dimension), qmm.affine / qmv.affine tunes at
# the acceptance buckets of the four Llama-3.1-8B shapes (int4 g64) with every candidate's time,
# quantized_linear's op_matrix against cuBLASLt BF16 dense, then memcheck and racecheck of the
# leftover test as far as the time allows.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache $R/tunes; T=build/tests/device/qmm_affine_op_test; H=build/tools/hone/hone
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
{
timeout 20 build/qmm_probe 16 28672 4096 64 2,16,64,256,5,4,1 2,16,128,256,9,4,1 2,16,128,256,9,6,1 0,16,32,256,8,3,1; echo "rc=$?"
timeout 20 build/qmm_probe 32 4096 4096 64 2,32,64,256,5,4,2 2,32,128,256,9,3,2 2,32,64,256,5,6,2 0,32,64,256,8,3,2; echo "rc=$?"
timeout 20 build/qmm_probe 64 28672 4096 64 2,64,256,256,17,3,1 2,64,256,256,17,3,2 2,64,128,256,9,4,1; echo "rc=$?"
} > $R/probe.log 2>&1
cat $R/probe.log
export HONE_CACHE_DIR=$R/cache
timeout 150 $T --gtest_filter='*Mma*:*EveryCompiledTactic*:QmmAffineHostTest.*' > $R/test.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test.log
grep -E "FAILED|PASSED|rc=" $R/test.log | head -20
pack
for r in 16 32 64 128 256 24; do
  for nk in "n=4096,k=4096" "n=6144,k=4096" "n=28672,k=4096" "n=4096,k=14336"; do
    [ $(left) -lt 330 ] && break 2
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
  echo "quick: rows=1|8|16|24|32|48|64|96|128|192|256, $nk, bits=4, group=64" >> $R/shapes.txt
done
timeout $(( $(left) - 200 )) build/bench/op_matrix --op quantized_linear --shapes $R/shapes.txt --set quick --samples 7 \
  --also quantized_linear.qmv --also quantized_linear.qmm --json $R/ql.json > $R/ql.log 2>&1
echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/ql.log
grep -E '^\| rows|geomean' $R/ql.log | cut -c1-200
pack
HONE_DEVICE_TEST_REDUCED=1 timeout 70 compute-sanitizer --tool memcheck --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_memcheck.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_memcheck.log
tail -n 2 $R/sanitizer_memcheck.log
pack
HONE_DEVICE_TEST_REDUCED=1 timeout $(( $(left) - 5 )) compute-sanitizer --tool racecheck --error-exitcode 86 $T --gtest_filter='*MmaPathHandlesLeftovers*' > $R/sanitizer_racecheck.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/sanitizer_racecheck.log
tail -n 3 $R/sanitizer_racecheck.log
pack

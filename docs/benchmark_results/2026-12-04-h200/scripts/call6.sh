#!/usr/bin/env bash
# Call 6: the method after the change (cuda.graph.v3: rotation over 8 x the LLC, op_matrix in
# interleaved_order), defaults only: the backend's device tests; call 5's op_matrix points (the
# two sides' picks tuned here first: hone tune of qmv.affine and qmm.affine on those buckets,
# the cache of call 1 being stale under v3); then the quantized_linear device tests.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 560 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache; H=build/tools/hone/hone
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
export HONE_CACHE_DIR=$R/cache
timeout 60 build/tests/device/cuda_backend_test > $R/test_backend.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test_backend.log
for nk in "n=4096,k=14336" "n=28672,k=4096"; do
  for r in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 24 32 64; do
    [ $(left) -lt 200 ] && break 2
    for op in qmv.affine qmm.affine; do
      [ $op = qmv.affine ] && [ $r -gt 32 ] && continue
      [ $op = qmm.affine ] && [ $r -lt 9 ] && continue
      ts=$(date +%s%N)
      timeout 40 $H --backend cuda tune --op $op --shape "rows=$r,$nk,bits=4,group=64" >> $R/tune.log 2>&1
      echo "rc=$? $op rows=$r $nk $(( ($(date +%s%N) - ts) / 1000000 )) ms" >> $R/tune.log
    done
  done
done
$H cache verify > $R/cache_verify.log 2>&1; echo "rc=$?" >> $R/cache_verify.log
pack
printf '%s\n' 'quick: rows=1..16|24|32|64, n=28672, k=4096, bits=4, group=64' \
  'quick: rows=1..16|24|32|64, n=4096, k=14336, bits=4, group=64' > $R/shapes.txt
timeout $(( $(left) - 40 )) build/bench/op_matrix --op quantized_linear --shapes $R/shapes.txt --set quick --samples 7 \
  --also quantized_linear.qmv --also quantized_linear.qmm --json $R/v3.json > $R/v3.log 2>&1
echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/v3.log
pack
timeout $(( $(left) - 5 )) build/tests/device/quantized_linear_op_test > $R/test_linear.log 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> $R/test_linear.log
cd $OUT && tail -n 2 r/test_backend.log r/cache_verify.log r/v3.log r/test_linear.log; grep -c 'rc=0' r/tune.log
pack

#!/usr/bin/env bash
# Call 6 (issue 13): two chunks per ring step where a two-chunk step stays within 64 KB (two
# stages instead of four), in place of one chunk (64-byte TMA box rows) past a 40 KB step. Reduced
# kernel tests of the mma and ring paths, a short qmv.affine table (int4 g64) and gemv.bf16 table
# (mma and ring paths), memcheck of the ring configs, within ~190 s (the device time left).
# Programs carried; everything lands in $OUT/results.tar.gz, packed after each step.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 190 - ($(date +%s) - T0) )); }
tar xJf .carry/bin.tar.xz
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 45 build/tests/device/qmv_affine_kernel_test > $R/tests.log 2>&1
echo "qmv tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/tests.log
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 30 build/tests/device/gemv_bf16_kernel_test >> $R/tests.log 2>&1
echo "gemv tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/tests.log
grep -E '^\[  (PASSED|FAILED) |Failure|differs' $R/tests.log | head -8
pack
HONE_TEST_PATHS=mma,ring timeout 50 build/bench/qmv_affine_harness --no-check \
  --shapes 28672x4096,4096x14336,4096x4096 --rows 1,16,32 --formats 4x64 \
  --csv $R/qmv_table.csv > $R/qmv_table.log 2>&1
echo "qmv table rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/qmv_table.log
cut -c1-200 $R/qmv_table.log | tail -n 11
pack
HONE_TEST_PATHS=mma,ring timeout 40 build/bench/gemv_bf16_harness --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,32 --csv $R/gemv_table.csv > $R/gemv_table.log 2>&1
echo "gemv table rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/gemv_table.log
cut -c1-200 $R/gemv_table.log | tail -n 7
pack
for t in qmv_affine_kernel_test:QmvAffineKernel.Every* gemv_bf16_kernel_test:GemvBf16KernelTest.Every*; do
  [ $(left) -lt 30 ] && break
  HONE_TEST_PATHS=ring HONE_DEVICE_TEST_REDUCED=2 timeout $(( $(left) - 5 )) compute-sanitizer --tool memcheck \
    --error-exitcode 3 build/tests/device/${t%%:*} --gtest_filter="${t#*:}" > $R/sanitizer.raw 2>&1
  echo "memcheck ${t%%:*} (ring configs, minimal shapes): rc $? $(grep -E 'ERROR SUMMARY|\[  (PASSED|FAILED) ' $R/sanitizer.raw | tr '\n' ' ')" | tee -a $R/sanitizer.log
  grep -m 10 -E 'Invalid|Failure' $R/sanitizer.raw >> $R/sanitizer.log; rm -f $R/sanitizer.raw
  pack
done

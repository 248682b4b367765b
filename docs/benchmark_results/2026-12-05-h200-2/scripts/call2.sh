#!/usr/bin/env bash
# Call 2 (issue 13): the ring with one TMA box per slice and step (rows of 128 or 256 bytes, in
# place of one 64-byte-row box per chunk), and what TMA boxes of each width read with no
# arithmetic (bench/read_ceiling's tma pattern), beside the loads-only patterns of the same bytes.
# Reduced kernel tests of the mma and ring paths (every ring config bitwise against the mma path
# of its k_slices), the qmv.affine and gemv.bf16 tables (mma and ring paths), memcheck of the
# ring configs. Programs carried. Everything lands in $OUT/results.tar.gz, packed after each step.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 575 - ($(date +%s) - T0) )); }
tar xJf .carry/bin.tar.xz
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
timeout 90 build/bench/read_ceiling --shapes 28672x2048,4096x7168,28672x8192 --json $R/read_ceiling.json > $R/read_ceiling.log 2>&1
echo "read_ceiling rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/read_ceiling.log
grep -E "tma|rows J|stream" $R/read_ceiling.log | sort -k1,1 -k4,4n | head -60
pack
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 100 build/tests/device/qmv_affine_kernel_test > $R/tests.log 2>&1
echo "qmv tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/tests.log
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 60 build/tests/device/gemv_bf16_kernel_test >> $R/tests.log 2>&1
echo "gemv tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/tests.log
grep -E '^\[  (PASSED|FAILED) |Failure|differs' $R/tests.log | head -8
pack
HONE_TEST_PATHS=mma,ring timeout 150 build/bench/qmv_affine_harness --no-check \
  --shapes 28672x4096,4096x14336,4096x4096 --rows 1,4,16,32 --formats 4x64 \
  --csv $R/qmv_table.csv > $R/qmv_table.log 2>&1
echo "qmv table rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/qmv_table.log
cut -c1-200 $R/qmv_table.log | tail -n 14
pack
HONE_TEST_PATHS=mma,ring timeout 100 build/bench/gemv_bf16_harness --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,16,32 --csv $R/gemv_table.csv > $R/gemv_table.log 2>&1
echo "gemv table rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/gemv_table.log
cut -c1-200 $R/gemv_table.log | tail -n 9
pack
for t in qmv_affine_kernel_test:QmvAffineKernel.Every* gemv_bf16_kernel_test:GemvBf16KernelTest.Every*; do
  [ $(left) -lt 40 ] && break
  HONE_TEST_PATHS=ring HONE_DEVICE_TEST_REDUCED=2 timeout $(( $(left) / 2 )) compute-sanitizer --tool memcheck \
    --error-exitcode 3 build/tests/device/${t%%:*} --gtest_filter="${t#*:}" > $R/memcheck.raw 2>&1
  echo "memcheck ${t%%:*} (ring configs, minimal shapes): rc $? $(grep -E 'ERROR SUMMARY|\[  (PASSED|FAILED) ' $R/memcheck.raw | tr '\n' ' ')" | tee -a $R/memcheck.log
  grep -m 10 -E 'Invalid|Failure' $R/memcheck.raw >> $R/memcheck.log; rm -f $R/memcheck.raw
done
pack

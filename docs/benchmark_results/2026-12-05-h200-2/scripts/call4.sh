#!/usr/bin/env bash
# Call 4 (issue 13): the ring stage carries the activations of its chunks too (one TMA box per
# slice and chunk, after the weights' planes), so the consumers read both operands from shared
# memory; the producer waits for the previous kernel only before its first activation box.
# Reduced kernel tests of the mma and ring paths (every ring config bitwise against the mma path
# of its k_slices), the qmv.affine table (int4 g64 / g128, int8 g64; mma and ring paths), the
# gemv.bf16 table, ncu of the 16-consumer ring config, memcheck and racecheck of the ring
# configs. Programs carried. Everything lands in $OUT/results.tar.gz, packed after each step.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s); left() { echo $(( 575 - ($(date +%s) - T0) )); }
tar xJf .carry/bin.tar.xz
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R
pack() { (cd $OUT && tar czf results.tar.gz r); }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 100 build/tests/device/qmv_affine_kernel_test > $R/tests.log 2>&1
echo "qmv tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/tests.log
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 60 build/tests/device/gemv_bf16_kernel_test >> $R/tests.log 2>&1
echo "gemv tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/tests.log
grep -E '^\[  (PASSED|FAILED) |Failure|differs' $R/tests.log | head -8
pack
HONE_TEST_PATHS=mma,ring timeout 200 build/bench/qmv_affine_harness --no-check \
  --shapes 28672x4096,4096x14336,4096x4096 --rows 1,4,8,16,24,32 --formats 4x64,4x128,8x64 \
  --csv $R/qmv_table.csv > $R/qmv_table.log 2>&1
echo "qmv table rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/qmv_table.log
cut -c1-200 $R/qmv_table.log | tail -n 56
pack
HONE_TEST_PATHS=mma,ring timeout 100 build/bench/gemv_bf16_harness --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,4,8,16,24,32 --csv $R/gemv_table.csv > $R/gemv_table.log 2>&1
echo "gemv table rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/gemv_table.log
cut -c1-200 $R/gemv_table.log | tail -n 15
pack
i=0
for tactic in \
  qmv.affine.ring:rows_per_cta=8,warps=16,warps_k=1,outputs_per_warp=16,split_k=1,stages=4,ctas_per_sm=1; do
  [ $(left) -lt 90 ] && break
  i=$((i + 1))
  case $tactic in *ring*) name=weight_ring_kernel ;; *) name=qmv_affine_mma_kernel ;; esac
  HONE_TEST_TACTIC=$tactic timeout 80 ncu --kernel-name "regex:$name" --launch-skip 1 \
    --launch-count 1 --section SpeedOfLight --page raw \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration\.sum|sm__warps_active\.avg\.per_cycle_active|smsp__issue_active\.avg\.per_cycle_active|smsp__inst_executed\.sum$|sm__cycles_active\.avg$' \
    build/bench/qmv_affine_harness --no-check --shapes 28672x4096 --rows 1 --formats 4x64 \
    > $R/ncu_$i.log 2>&1
  echo "== $i $tactic: rc $?" | tee -a $R/ncu_summary.log
  grep -E 'gpu__time_duration.sum|warps_active.avg.per_cycle|issue_active.avg.per_cycle|inst_executed.sum |cycles_active.avg |stalled_' \
    $R/ncu_$i.log | awk '$NF+0 > 0.05 || /duration|active|inst_executed/' | sort -k3 -g -r | head -14 | tee -a $R/ncu_summary.log
  pack
done
for tool in memcheck racecheck; do
  for t in qmv_affine_kernel_test:QmvAffineKernel.Every* gemv_bf16_kernel_test:GemvBf16KernelTest.Every*; do
    [ $(left) -lt 50 ] && break 2
    HONE_TEST_PATHS=ring HONE_DEVICE_TEST_REDUCED=2 timeout $(( $(left) - 10 )) compute-sanitizer --tool $tool \
      --error-exitcode 3 build/tests/device/${t%%:*} --gtest_filter="${t#*:}" > $R/sanitizer.raw 2>&1
    echo "$tool ${t%%:*} (ring configs, minimal shapes): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|\[  (PASSED|FAILED) ' $R/sanitizer.raw | tr '\n' ' ')" | tee -a $R/sanitizer.log
    grep -m 10 -E 'Invalid|Race|hazard|Failure' $R/sanitizer.raw >> $R/sanitizer.log; rm -f $R/sanitizer.raw
    pack
  done
done
pack

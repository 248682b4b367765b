#!/usr/bin/env bash
# One H200 call (~7 min), after call_h200_step.sh: Nsight Compute of the int4 gate_up pick of the
# step's tolerance tune (qmv.affine mma, 8 rows a CTA, 32 rows a warp, 28672 x 4096 g64, one
# row; 184 registers), with warp-state and source-level stall sampling, then the vendor point's
# part 2 of 2 (decode_matrix.sh gemv.bf16 tolerance).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_h200_profile.sh OUT
set -u
OUT=$1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
export HONE_CACHE_DIR
HONE_CACHE_DIR=$(mktemp -d)
unset HONE_CACHE HONE_AUTOTUNE
tactic='qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=32,split_k=1'
timeout 200 ncu --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --section SourceCounters --import-source no --kernel-name-base demangled \
  --kernel-name 'regex:qmv_affine_mma_kernel<\(int\)4, \(int\)1, \(int\)2, \(int\)2, \(int\)256' \
  --launch-skip 1 --launch-count 1 \
  -f -o /tmp/pick build/tools/hone/hone bench --op qmv.affine \
  --shape rows=1,n=28672,k=4096,bits=4,group=64 --tactic "$tactic" --numerics tolerance \
  --samples 1 --batch 1 >"$OUT/pick.run.log" 2>&1
echo "ncu rc=$?"
tail -n 4 "$OUT/pick.run.log"
ncu -i /tmp/pick.ncu-rep --page details >"$OUT/pick.txt" 2>&1
ncu -i /tmp/pick.ncu-rep --page source --print-source sass --csv >/tmp/pick.csv 2>&1 &&
  python3 scripts/ncu_stalls.py /tmp/pick.csv --top 40 >"$OUT/pick.stalls.txt" 2>&1
grep -E "Duration|DRAM Through|Registers Per|Grid Size|Achieved Occ|Active Warps Per|Eligible Warps|No Eligible|Issue Slots|Executed Ipc" "$OUT/pick.txt"
head -14 "$OUT/pick.stalls.txt"
RUN_BUDGET_S=${RUN_BUDGET_S:-420} scripts/device/decode_matrix.sh "$OUT" build gemv.bf16 2 2 tolerance >"$OUT/decode_matrix.out" 2>&1
echo "decode_matrix rc=$?"
tail -n 12 "$OUT/decode_matrix.out"

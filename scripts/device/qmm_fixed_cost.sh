#!/usr/bin/env bash
# Where the TMA engine's fixed cost per launch sits (qmm_block_rate.sh, 2026-12-07-7 call1: on
# N = 4096 at split_k = 1 the time is a + b x blocks with a = 13.9 us at 128 rows and 9.3 at 64,
# b = 1.1-1.2 us a 256-deep block, the same in CUDA-graph tunes). ncu times one launch of the
# kernel alone (its own duration, caches flushed) at K = 1024, 4096 and 8192: a duration that
# keeps the 9-14 us is the kernel's own (prologue, epilogue, something per CTA); one without it
# puts the cost between launches. With the duration: DRAM and L2 bytes, SM cycles active, and
# the launch's occupancy. Then the warp-state and source-level stall profile of the 128-row kernel
# at K = 1024 (4 blocks, so mostly the fixed part): whether its warps wait at the first full
# barrier (the prologue's copies), at the epilogue's stores, or elsewhere. About 70 s.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/qmm_fixed_cost.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin qmm_fixed_cost "${BUDGET:-90}" "${1:?OUTDIR}" build
metrics=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_elapsed.max,dram__bytes_read.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__shared_mem_per_block_dynamic
for k in 1024 4096 8192; do
  QMM_PROBE_ONCE=1 timeout "$(cap 40)" ncu --metrics "$metrics" --csv \
    "$BUILD/bench/qmm_probe" 128 4096 "$k" 64 3,128,64,256,5,3,1 3,64,64,256,5,4,1 \
    >"$R/ncu_k$k.csv" 2>"$R/ncu_k$k.err"
  stamp "ncu k=$k" $?
done
grep -h 'gpu__time_duration\|sm__cycles_elapsed' "$R"/ncu_k*.csv | cut -d, -f5,13- | head -20
pack
rep=$(mktemp -d)/stalls
QMM_PROBE_ONCE=1 timeout "$(cap 60)" ncu --section SpeedOfLight --section LaunchStats \
  --section WarpStateStats --section SourceCounters --import-source no -f -o "$rep" \
  "$BUILD/bench/qmm_probe" 128 4096 1024 64 3,128,64,256,5,3,1 >"$R/stalls.run.log" 2>&1
stamp "ncu stalls k=1024" $?
ncu -i "$rep.ncu-rep" --page details >"$R/stalls_k1024.txt" 2>&1
ncu -i "$rep.ncu-rep" --page source --print-source sass --csv >"$rep.source.csv" 2>&1 &&
  python3 scripts/ncu_stalls.py "$rep.source.csv" --top 30 >"$R/stalls_k1024.stalls.txt" 2>&1
grep -E 'Duration|Elapsed Cycles|SM Active' "$R/stalls_k1024.txt"
head -45 "$R/stalls_k1024.stalls.txt"
pack

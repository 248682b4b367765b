#!/usr/bin/env bash
# ncu of one ring kernel launch (qmv.affine, 28672x4096 int4 g64, rows 1) and of the mma path's
# best config on the same cell: speed of light, warp states and the source-level stall sampling
# of the hottest SASS lines (scripts/ncu_stalls.py). Programs carried (scripts/device/pack_carry.sh).
set -uo pipefail
out=${OUT:?}/profile
mkdir -p "$out"
[ -d build/bench ] || tar xJf .carry/bin.tar.xz || exit 1
BUILD=build
. scripts/device/env.sh
# The first launch of each: the first ring config of the list, and the mma default.
for path in ring mma; do
  name=weight_ring_kernel
  [ $path = mma ] && name=qmv_affine_mma_kernel
  HONE_TEST_PATHS=$path timeout 200 ncu --kernel-name "regex:$name" --launch-count 1 --section SpeedOfLight --section WarpStateStats \
    --section SourceCounters --section Occupancy --page details \
    build/bench/qmv_affine_harness --no-check --shapes 28672x4096 --rows 1 --formats 4x64 \
    >"$out/ncu_$path.log" 2>&1
  echo "$path: rc $?"
  grep -E 'Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|Stall' "$out/ncu_$path.log" | head -24
done

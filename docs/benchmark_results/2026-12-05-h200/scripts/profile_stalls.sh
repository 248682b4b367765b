#!/usr/bin/env bash
# ncu stall breakdown (per issued instruction) of single configs on qmv.affine 28672x4096 int4
# g64, rows 1: the best ring config of call 2, a 16-consumer ring config, and the mma path's best
# (HONE_TEST_TACTIC times one config beside the default; the profile takes that config's first
# launch). Programs carried (scripts/device/pack_carry.sh).
set -uo pipefail
out=${OUT:?}/stalls
mkdir -p "$out"
[ -x build/bench/qmv_affine_harness ] && [ -n "${HONE_SKIP_UNPACK:-}" ] || tar xJf .carry/bin.tar.xz || exit 1
BUILD=build
. scripts/device/env.sh
i=0
for tactic in \
  qmv.affine.ring:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=32,split_k=1,stages=8,ctas_per_sm=2 \
  qmv.affine.ring:rows_per_cta=8,warps=16,warps_k=1,outputs_per_warp=16,split_k=1,stages=4,ctas_per_sm=1 \
  qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=2,outputs_per_warp=16,split_k=1; do
  i=$((i + 1))
  case $tactic in *ring*) name=weight_ring_kernel ;; *) name=qmv_affine_mma_kernel ;; esac
  HONE_TEST_TACTIC=$tactic timeout 150 ncu --kernel-name "regex:$name" --launch-skip 1 \
    --launch-count 1 --section SpeedOfLight --section Occupancy --page raw \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration\.sum|sm__warps_active\.avg\.per_cycle_active|smsp__issue_active\.avg\.per_cycle_active' \
    build/bench/qmv_affine_harness --no-check --shapes 28672x4096 --rows 1 --formats 4x64 \
    >"$out/ncu_$i.log" 2>&1
  echo "== $i $tactic: rc $?"
  grep -E 'weight_ring_kernel<|qmv_affine_mma_kernel<' "$out/ncu_$i.log" | head -1 | cut -c1-120
  grep -E 'gpu__time_duration.sum|warps_active.avg.per_cycle|issue_active.avg.per_cycle|stalled_' \
    "$out/ncu_$i.log" | awk '$NF+0 > 0.05 || /duration|active/' | sort -k3 -g -r | head -14
done

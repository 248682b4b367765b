#!/usr/bin/env bash
# One call on whichever card comes (~9.5 min), over .carry: landing.tar.xz (qmm_probe of 14ec84b,
# the old epilogues, for the comparison) and bin.tar.xz (scripts/device/pack_carry.sh over this
# tree, which every test and call_batch_landing.sh run: the TMA engine's split-K epilogue reduces
# fragment by fragment through distributed shared memory, the mma and register-A wgmma paths'
# epilogue a float4 at a time; 256-row tiles; warpgroups along K).
# On an H200: issue 14's step bars (call_step_bars.sh, 330 s), then call_batch_landing.sh without
# the block rate, then one round of the split-K comparison. On an H100: call_batch_landing.sh
# without the block rate, issue 11's failing cells (4096 x 4096 and 6144 x 4096 at 64, 128 and
# 256 rows) of quantized_linear.sh, tuned, then one round of the comparison (packed after each
# probe, so that a cut call keeps what ran). SHORT=1 (~7 min, for a short budget): on an H200 the
# step bars and one round; on an H100 call_batch_landing.sh and one round. SHORT=2: see below.
#
# The split-K comparison: qmm_probe of 14ec84b (reduce_and_store's per-output loop) and of this
# tree, in turn (old, new), on the TMA engine's split-K kernels at 64 rows of
# 4096 x 4096 and 6144 x 4096, and the mma kernel the tunes took there (0,64,32,256,8,3,1, four
# K slices a CTA). Split 8 (not among the tunes' candidates, which stop at 4) on the 17-warp
# 64 x 256 kernels: four consumer streams a CTA, two K blocks each at 4096 x 4096. And at 256
# rows: the 128 x 64 x 256 kernels (the tunes' picks there) beside the new 256 x 64 x 128 ones.
# And 64 x 64 x 256 with 2 and 4 warpgroups along K (9 and 17 warps, dca4fc1) at split 2.
#
#   scripts/device/call_landing_any_card.sh OUT
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?OUTDIR}
nvidia-smi -L
split_compare() {
  local r=$OUT/split_k
  mkdir -p "$r"
  local c=(0,64,32,256,8,3,1 3,64,64,256,5,4,2 3,64,64,128,5,4,2 3,64,64,128,5,4,4
    3,64,128,256,9,4,4 3,64,128,128,9,3,4 3,64,128,128,9,3,8 3,64,64,256,5,4,4
    3,64,256,256,17,3,4 3,64,256,256,17,3,8 3,64,256,128,17,5,8
    3,64,64,256,9,4,2 3,64,64,256,17,4,2 2,64,64,256,17,4,2)
  # 256 rows: the 128-row kernels (the picks there) beside the 256-row ones (fe7339a; the old
  # build has none and says so).
  local c256=(3,128,64,256,5,3,1 3,128,64,256,5,3,2 3,128,64,256,5,3,1,1 2,256,64,128,5,3,1
    3,256,64,128,5,3,1 3,256,64,128,5,3,2 3,256,64,128,5,3,1,1)
  for round in $(seq "${1:-2}"); do
    for b in old new; do
      for nk in "4096 4096" "6144 4096"; do
        # shellcheck disable=SC2086
        timeout 40 "/tmp/probe_$b" 64 $nk 64 "${c[@]}" >"$r/${b}_${nk// /x}_$round.log" 2>&1
        echo "$b $nk round $round rc=$?"
        # shellcheck disable=SC2086
        timeout 25 "/tmp/probe_$b" 256 $nk 64 "${c256[@]}" >"$r/${b}_m256_${nk// /x}_$round.log" 2>&1
        echo "$b 256 rows $nk round $round rc=$?"
        (cd "$OUT" && tar czf split_k.tar.gz split_k)
      done
    done
  done
  grep -H . "$r"/*.log | cut -c1-160
  (cd "$OUT" && tar czf split_k.tar.gz split_k)
}
# 14ec84b's qmm_probe (the old epilogues) as /tmp/probe_old.
old_probe() {
  mkdir -p /tmp/old && tar xJf .carry/landing.tar.xz -C /tmp/old build/bench/qmm_probe &&
    cp /tmp/old/build/bench/qmm_probe /tmp/probe_old
}
if [ "${SHORT:-0}" = 2 ]; then
  # The least that answers a question (~4-5 min): on an H200 issue 14's 2.5x (call_step_bars.sh
  # QUICK=1); on an H100 the split-K comparison, one round.
  tar xJf .carry/bin.tar.xz && cp build/bench/qmm_probe /tmp/probe_new
  if nvidia-smi -L | grep -q H200; then
    QUICK=1 BUDGET=${STEP_BUDGET:-300} bash scripts/device/call_step_bars.sh "$OUT" 2>&1 | tail -30
  else
    old_probe
    split_compare 1
  fi
  exit 0
fi
if nvidia-smi -L | grep -q H200; then
  tar xJf .carry/bin.tar.xz && cp build/bench/qmm_probe /tmp/probe_new &&
    BUDGET=330 bash scripts/device/call_step_bars.sh "$OUT" 2>&1 | tail -30
  old_probe
  [ "${SHORT:-0}" = 1 ] ||
    LANDING_ARCHIVE=.carry/bin.tar.xz BLOCK_RATE=0 bash scripts/device/call_batch_landing.sh \
      "$OUT" 2>&1 | tail -60
  split_compare 1
else
  old_probe
  LANDING_ARCHIVE=.carry/bin.tar.xz BLOCK_RATE=0 bash scripts/device/call_batch_landing.sh "$OUT" \
    2>&1 | tail -60
  cp build/bench/qmm_probe /tmp/probe_new # call_batch_landing.sh unpacked bin.tar.xz
  if [ "${SHORT:-0}" != 1 ]; then
    # The bar first: the tunes take every new kernel among their candidates.
    QL_BUDGET=230 QL_TABLE_RESERVE=110 QL_ROWS="64 128 256" \
      QL_MATRICES="n=4096,k=4096 n=6144,k=4096" bash scripts/device/quantized_linear.sh "$OUT" \
      build 2>&1 | tail -40
  fi
  split_compare 1
fi

#!/usr/bin/env bash
# qmm.affine's TMA engine: what one K block costs a CTA, apart from the launch's fixed costs.
# Times the lookahead kernel alone (bench/qmm_probe, cold L2, median of 9 samples) on N = 4096 at
# split_k = 1 (64 or 32 CTAs of one block each per SM) over K = 1024 .. 8192, at 128 and 64
# activation rows: the slope over K is a CTA's time per 256-deep block, the intercept the
# launch, prologue and epilogue. A slope that does not follow the tile's wgmma work (TM 128
# against 64) says the consumer loop, not the tensor cores, sets it (2026-12-07-7: 1.19 and
# 1.13 us a block; docs/notes/qmm_affine.md). About 30 s.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/qmm_block_rate.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin qmm_block_rate "${BUDGET:-60}" "${1:?OUTDIR}" build
# rates LOG: the probe over K of the two 256-deep tiles and their 2-warpgroup twins, onto LOG.
rates() {
  local k
  for k in 1024 2048 4096 8192; do
    timeout "$(cap 15)" "$BUILD/bench/qmm_probe" 128 4096 "$k" 64 3,128,64,256,5,3,1 \
      3,128,128,128,9,5,1 >>"$1" 2>&1
    timeout "$(cap 15)" "$BUILD/bench/qmm_probe" 64 4096 "$k" 64 3,64,64,256,5,4,1 \
      3,64,128,256,9,4,1 >>"$1" 2>&1
  done
}
rates "$R/probe.log"
stamp probe $?
cat "$R/probe.log"
# WARM=1: the same with one copy of the weights (at most 17 MB, warm in the L2 after the first
# launch): what the intercept loses then is the cold first reads; what it keeps is the launch,
# the pipeline's ramp and the tail.
if [ "${WARM:-0}" = 1 ]; then
  QMM_PROBE_COPIES=1 rates "$R/probe_warm.log"
  stamp "probe warm" $?
  sed 's/^/warm /' "$R/probe_warm.log"
fi
pack

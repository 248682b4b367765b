#!/usr/bin/env bash
# One call: the lookahead kernels with 8-step batches at 256-deep blocks, as landed on main.
# Carries .carry/landing.tar.xz (qmm_affine_op_test and qmm_probe of main's build, packed by
# scripts/device/pack_landing_carry.sh), unpacked to build/. On the reduced shapes: the lookahead
# kernels against their plain twins bit for bit (and each against the reference), stream-K's
# repeats at 37, 64 and 128 rows; then qmm_block_rate.sh (the time per 256-deep K block, 1.002 us
# at 64 x 64 x 256 and 1.148 at 128 x 64 x 256 in 2026-12-07-9 call2's batch build), after the new
# 64 x 64 x 128 kernels beside 64 x 64 x 256 on 4096 x 4096 at 64 rows. About 2 min; BLOCK_RATE=0
# leaves qmm_block_rate.sh out; LANDING_ARCHIVE (default .carry/landing.tar.xz) names another
# archive holding both programs (bin.tar.xz of pack_carry.sh does).
#
#   scripts/device/call_batch_landing.sh OUT
set -u
cd "$(dirname "$0")/../.."
rm -rf build
tar xJf "${LANDING_ARCHIVE:-.carry/landing.tar.xz}"
source scripts/device/env.sh
run_begin landing "${BUDGET:-150}" "${1:?OUTDIR}" build
filtered_test "lookahead and stream-K tests" 90 qmm_affine_op_test \
  '*Lookahead*:*StreamKRepeats*' 'twin|Which is|m='
# 64 x 64 x 128 at two CTAs an SM (new) beside the one-CTA 64 x 64 x 256, on 4096 x 4096 at 64
# rows: at splits 2 and 4 (128 and 256 CTAs) the second CTA of an SM has work.
timeout "$(cap 30)" "$BUILD/bench/qmm_probe" 64 4096 4096 64 3,64,64,256,5,4,2 3,64,64,128,5,4,2 \
  3,64,64,256,5,4,4 3,64,64,128,5,4,4 2,64,64,128,5,4,2 2,64,64,128,5,4,4 | tee "$R/probe.log"
stamp "probe 64 x 64 x 128" $?
pack
[ "${BLOCK_RATE:-1}" = 0 ] || BUDGET=50 bash scripts/device/qmm_block_rate.sh "$OUTDIR" | tail -20

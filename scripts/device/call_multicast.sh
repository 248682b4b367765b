#!/usr/bin/env bash
# One call: the TMA engine's multicast kernels (engine 5, qmm.affine.mma_tma_mc: each activation
# copy shared by two neighbouring weight tiles of a cluster) against their lookahead twins
# (engine 3) in the same build: qmm_probe and qmm_affine_op_test of the branch tma-multicast
# (docs/notes/patches/qmm_tma_multicast.patch on main), from .carry/mc.tar.xz (packed by
# scripts/device/pack_multicast_carry.sh) or, where that is absent, from the bmc/ folder of
# .carry/bin.tar.xz (the two packed with main's programs: one archive shares their bytes),
# unpacked to bmc/. First the bits (the multicast kernel
# against its twin, every split, odd and even tile counts, 50 launches in a row), then qmm_probe
# on 4096 x 4096 at 64 and 128 rows, the tiles and splits the tunes pick there, each beside its
# twin in the same samples, and the time per 256-deep K block of both at 128 rows (K = 1024 ..
# 8192, split 1). About 90 s.
#
#   scripts/device/call_multicast.sh OUT
set -u
source "$(dirname "$0")/env.sh"
rm -rf bmc && mkdir -p bmc
if [ -f .carry/mc.tar.xz ]; then
  tar xJf .carry/mc.tar.xz -C bmc --strip-components=1
else
  tar xJf .carry/bin.tar.xz --wildcards 'bmc/*'
fi
run_begin multicast "${BUDGET:-150}" "${1:?OUTDIR}" bmc
filtered_test "multicast test" 60 qmm_affine_op_test '*Multicast*:*TacticsRoundTrip*' \
  'against|in a row'
probe() { timeout "$(cap 20)" "$BUILD/bench/qmm_probe" "$@" >>"$R/probe.log" 2>&1; }
# 64 rows: 64 x 64 x 256 at splits 1, 2 and 4; 64 x 128 x 256 at 2 and 4.
probe 64 4096 4096 64 3,64,64,256,5,4,1 5,64,64,256,5,4,1 3,64,64,256,5,4,2 5,64,64,256,5,4,2 \
  3,64,64,256,5,4,4 5,64,64,256,5,4,4 3,64,128,256,9,4,2 5,64,128,256,9,4,2 \
  3,64,128,256,9,4,4 5,64,128,256,9,4,4
# 128 rows: 128 x 64 x 256 at 1 and 2; 128 x 128 x 128 at 1 and 2. 32 rows: 32 x 64 x 256.
probe 128 4096 4096 64 3,128,64,256,5,3,1 5,128,64,256,5,3,1 3,128,64,256,5,3,2 \
  5,128,64,256,5,3,2 3,128,128,128,9,5,1 5,128,128,128,9,5,1 3,128,128,128,9,5,2 \
  5,128,128,128,9,5,2
probe 32 4096 4096 64 3,32,64,256,5,6,2 5,32,64,256,5,6,2 3,32,64,256,5,6,4 5,32,64,256,5,6,4
stamp "probe 4096" $?
for k in 1024 2048 4096 8192; do
  probe 128 4096 "$k" 64 3,128,64,256,5,3,1 5,128,64,256,5,3,1
  probe 64 4096 "$k" 64 3,64,64,256,5,4,1 5,64,64,256,5,4,1
done
stamp "probe over K" $?
cat "$R/probe.log"
pack

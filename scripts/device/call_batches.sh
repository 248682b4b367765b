#!/usr/bin/env bash
# One call: the TMA engine's lookahead kernels in batches of wgmma a commit group
# (docs/notes/patches/qmm_tma_wgmma_batches.patch: 4 steps a batch; and 8 steps a batch at
# BK 256) against main's one-step form. Carries three archives: .carry/bin.tar.xz (main, to bm/),
# .carry/batches.tar.xz (to b4/) and .carry/batches8.tar.xz (to b8/); scripts/device/
# pack_batches_carry.sh builds them. For each build: LookaheadKernelsGiveTheirPlainTwinsBits (the
# lookahead kernels against their plain twins bit for bit: one slice, split-K and stream-K), then
# qmm_block_rate.sh (time per 256-deep K block; main's with warm weights too). Then, on an H200,
# issue 14's step bars over main; on an H100, quantized_linear on the 4096-row shapes over the
# faster batch build (STAGE2=0: neither).
#
#   scripts/device/call_batches.sh OUT
set -u
out=${1:?OUTDIR}
cd "$(dirname "$0")/../.."
rm -rf build
tar xJf .carry/bin.tar.xz --transform='s,^build/,bm/,'
tar xJf .carry/batches.tar.xz --transform='s,^build/,b4/,'
tar xJf .carry/batches8.tar.xz --transform='s,^build/,b8/,'
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
for b in b4 b8 bm; do
  HONE_DEVICE_TEST_REDUCED=1 timeout 90 $b/tests/device/qmm_affine_op_test \
    --gtest_filter='*Lookahead*' >"$out/test_$b.log" 2>&1
  echo "$b lookahead test rc=$?"
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$out/test_$b.log" | head -8
  rm -rf build && ln -s $b build && mkdir -p "$out/$b"
  warm=0 budget=45
  [ $b = bm ] && warm=1 budget=80 # main's with warm weights too: the intercept's cold part
  WARM=$warm BUDGET=$budget bash scripts/device/qmm_block_rate.sh "$out/$b" | sed "s/^/$b /"
done
k8() { awk '/m=128 n=4096 k=8192 3,128,64,256/ {print $(NF-1)}' "$out/$1/qmm_block_rate/probe.log"; }
best=b4
awk -v a="$(k8 b4)" -v b="$(k8 b8)" 'BEGIN {exit !(b < a)}' && best=b8
echo "faster batch build: $best"
[ "${STAGE2:-1}" = 1 ] || exit 0
if grep -q H200 "$out/gpu.txt"; then
  rm -rf build && ln -s bm build
  BUDGET=370 bash scripts/device/call_step_bars.sh "$out"
else
  QL_MATRICES="n=4096,k=4096 n=6144,k=4096" QL_ROWS="64 128 256" QL_BUDGET=220 \
    QL_TABLE_RESERVE=90 bash scripts/device/quantized_linear.sh "$out" $best
fi

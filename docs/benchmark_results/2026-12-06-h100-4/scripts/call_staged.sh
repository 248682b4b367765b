#!/usr/bin/env bash
# One call (~6 min): the staged group parameters of the int4 g64 parameter-vector kernels
# (qmv_affine.cuh; bench/read_ceiling's qrows p8 read 28672 x 4096's words and parameters at 0.90
# of the bandwidth against 0.73 for today's vector loads). First the kernel and op tests on
# reduced shapes (bit for bit against the configs of the same order, SiLU included), then the
# harness of the build before (.carry/prev_qmv_affine_harness.xz) and this one in turn, twice,
# cold as the tuner, int4 g64 on the four Llama-3.1-8B linears at rows 1, 4 and 8; then the
# read ceiling of the same bytes, and the int4 g64 decode step (defaults, then a 60 s tolerance
# tune of the four linears) against the PyTorch bf16 peer, same run.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_staged.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin staged 560 "${1:?OUTDIR}" build
for t in qmv_affine_kernel_test qmv_affine_op_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -8
done
xz -dc .carry/prev_qmv_affine_harness.xz >"$R/prev" && chmod +x "$R/prev"
for round in 1 2; do
  for which in before after; do
    bin=$BUILD/bench/qmv_affine_harness
    [ $which = before ] && bin=$R/prev
    HONE_TEST_PATHS=mma timeout "$(cap 60)" "$bin" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8 --formats 4x64 \
      --csv "$R/ab_${which}_$round.csv" >"$R/ab_${which}_$round.log" 2>&1
    stamp "harness $which round $round" $?
    grep -E '^4x' "$R/ab_${which}_$round.log" | sed "s/^/$which /" | cut -c1-130
  done
  pack
done
rm -f "$R/prev"
timeout "$(cap 60)" "$BUILD/bench/read_ceiling" --shapes 28672x2048,4096x7168,6144x2048,4096x2048 \
  --params 64 >"$R/rc.log" 2>&1
stamp "read_ceiling" $?
grep -E 'bandwidth|p8 occ0 J4|p4 occ0 J4|p0 occ0 J2' "$R/rc.log"
pack
MODEL=models/llama-3.1-8b.json
H=$BUILD/tools/hone/hone
timeout "$(cap 60)" python3 bench/peers/decode_step_torch.py --model "$MODEL" --batch 1 \
  --context 4k --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
stamp peer $?
grep -E '^\| llama' "$R/peer.md"
mkdir -p "$R/cache"
HONE_CACHE_DIR=$R/cache timeout "$(cap 90)" "$H" tune --model "$MODEL" --rows 1 \
  --ops qmv.affine,qmv.affine.silu_mul --bits 4 --group 64 --numerics tolerance --budget 60s \
  --json "$R/tune.json" >"$R/tune.log" 2>&1
stamp tune $?
grep -E '^qmv.affine' "$R/tune.log" | cut -c1-60,140-260
HONE_CACHE_DIR=$R/cache timeout "$(cap 100)" "$H" step --model "$MODEL" --batch 1 --context 4k \
  --quant int4:g64 --samples 9 --json "$R/step.json" >"$R/step.log" 2>&1
stamp step $?
sed -n '/| variant/,/^$/p' "$R/step.log"
grep -A14 'per-op breakdown' "$R/step.log"
pack

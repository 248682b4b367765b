#!/usr/bin/env bash
# One call (~8 min): the cp.async ring's staging rule (slices of 4 chunks or more) and the int4 g64
# default of J 2 at 8 K slices. The qmv.affine kernel and op tests and the decode step's reference
# test on reduced shapes; the harness with --staging auto and off in turn, twice, on the four
# Llama-3.1-8B int4 g64 linears at rows 1, 4, 8, 16; then the int4 g64 decode step (batch 1,
# context 4k) against the bf16 PyTorch peer, its four layer linears tuned at one row in tolerance
# mode (as in call_staged2.sh of 2026-12-06-h100-4).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_staged_ring_step.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin ring_step 570 "${1:?OUTDIR}" build
cat "$R/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
done
pack
for round in 1 2; do
  for mode in off auto; do
    HONE_TEST_PATHS=mma timeout "$(cap 60)" "$BUILD/bench/qmv_affine_harness" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16 --formats 4x64 \
      --staging $mode --csv "$R/ab_${mode}_$round.csv" >"$R/ab_${mode}_$round.log" 2>&1
    stamp "harness staging $mode round $round" $?
  done
done
grep -E '^4x' "$R/ab_auto_1.log" | cut -c1-110
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

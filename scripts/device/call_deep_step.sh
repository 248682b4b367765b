#!/usr/bin/env bash
# One call (either card): a qmv.affine flag's variant (scripts/device/pack_var.sh: var_harness,
# var_kernel_test, var_op_test, var_hone unpacked at the repository root) against this build.
# - Unless QUICK=1 (~5 min): call_defaults_ab.sh with this build as both base and new (an A/A),
#   the variant as VAR and its kernel test as VAR_TEST, rows 1-8, two rounds.
# - With QUICK=1 (~2 min): the variant's kernel test alone.
# Then the variant's op test (the defaults' batch invariance at rows 1-32), the PyTorch bf16
# peer, and the Llama-3.1-8B int4 g64 decode step at batch 1, context 4k, with this build's `hone`
# and var_hone in turn, two rounds, each with an empty cache (default, default + PDL checked over
# 1000 replays).
#
#   scripts/device/pack_var.sh src/cuda/kernels/qmv_affine/qmv_affine.cuh kQmvMmaDeep  # here
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/var.tar.xz && \
#     scripts/device/call_deep_step.sh OUT                                             # there
set -u
OUT=${1:?OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
[ -x var_hone ] || tar xJf .carry/var.tar.xz
W=$OUT/deep_step
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
if [ "${QUICK:-0}" = 1 ]; then
  HONE_DEVICE_TEST_REDUCED=1 timeout 60 ./var_kernel_test >"$W/test_var_kernel.log" 2>&1
  echo "var kernel test rc=$?"
else
  ROWS=${ROWS:-1,2,4,8} AB_BUDGET=${AB_BUDGET:-200} VAR=./var_harness VAR_TEST=./var_kernel_test \
    bash scripts/device/call_defaults_ab.sh "$OUT" build/bench/qmv_affine_harness
fi
HONE_DEVICE_TEST_REDUCED=1 timeout 60 ./var_op_test >"$W/test_var_op.log" 2>&1
echo "var op test rc=$?"
grep -hE '^\[  (PASSED|FAILED) |Failure' "$W"/test_var_*.log | head -6
M=models/llama-3.1-8b.json
timeout 60 python3 bench/peers/decode_step_torch.py --model "$M" --batch 1 --context 4k \
  --json "$W/peer.json" --md "$W/peer.md" >"$W/peer.log" 2>&1
echo "peer rc=$?"
grep -E '^\| llama' "$W/peer.md"
for round in 1 2; do
  for build in base var; do
    h=build/tools/hone/hone
    [ "$build" = var ] && h=./var_hone
    mkdir -p "$W/cache_${build}_$round"
    HONE_CACHE_DIR=$W/cache_${build}_$round timeout 60 "$h" step --model "$M" --batch 1 \
      --context 4k --quant int4:g64 --samples 9 --no-breakdown --json "$W/step_${build}_$round.json" \
      >"$W/step_${build}_$round.log" 2>&1
    echo "step $build $round rc=$?"
    grep -E '^\| default' "$W/step_${build}_$round.log"
  done
  tar czf "$OUT/deep_step.tar.gz" -C "$OUT" deep_step
done

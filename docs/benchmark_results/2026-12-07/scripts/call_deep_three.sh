#!/usr/bin/env bash
# One call (~5 min, either card): this build (kQmvMmaDeep off), the deep variant (kQmvMmaDeep on:
# .carry/var.tar.xz, unpacked at the root as var_*) and the deeper one (kQmvMmaDeep and
# kQmvMmaDeeper on: .carry/var2.tar.xz, unpacked under var2/), each built by
# scripts/device/pack_var.sh.
# - Both variants' kernel tests (every config, bitwise against the default's K order) and the deep
#   variant's op test (the defaults' batch invariance at rows 1-32).
# - The three harnesses in turn, two rounds: int4 g64 and g128 on the step's two large shapes at
#   rows 1, 2, 4, 8 (scripts/ab.py: base = this build, new = deep, var = deeper).
# - The Llama-3.1-8B int4 g64 decode step at batch 1, context 4k, default and default + PDL (PDL
#   checked against PDL off over 1000 replays), with each build's `hone` in turn, two rounds,
#   beside the PyTorch bf16 peer of the same step.
#
#   scripts/device/pack_var.sh src/cuda/kernels/qmv_affine/qmv_affine.cuh kQmvMmaDeep     # here,
#   # and again with kQmvMmaDeep on in the file for kQmvMmaDeeper, into .carry/var2.tar.xz
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/var.tar.xz && \
#     mkdir -p var2 && tar xJf .carry/var2.tar.xz -C var2 && scripts/device/call_deep_three.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin deep_three "${BUDGET:-330}" "${1:?OUTDIR}" build
[ -x var_hone ] || tar xJf .carry/var.tar.xz
[ -x var2/var_hone ] || { mkdir -p var2 && tar xJf .carry/var2.tar.xz -C var2; }
cat "$R/gpu.txt"
for v in var var2; do
  t=./var_kernel_test
  [ $v = var2 ] && t=var2/var_kernel_test
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 60)" "$t" >"$R/test_${v}_kernel.log" 2>&1
  stamp "$v kernel test" $?
done
HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 60)" ./var_op_test >"$R/test_var_op.log" 2>&1
stamp "var op test" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R"/test_*.log | head -8
pack
for round in 1 2; do
  for build in base new var; do
    h=$BUILD/bench/qmv_affine_harness
    [ "$build" = new ] && h=./var_harness
    [ "$build" = var ] && h=var2/var_harness
    HONE_TEST_PATHS=mma timeout "$(cap 40)" "$h" --no-check --shapes 28672x4096,4096x14336 \
      --rows 1,2,4,8 --formats 4x64,4x128 --csv "$R/${build}_$round.csv" >"$R/${build}_$round.log" 2>&1
    stamp "harness $build round $round" $?
  done
  pack
done
M=models/llama-3.1-8b.json
timeout "$(cap 60)" python3 bench/peers/decode_step_torch.py --model "$M" --batch 1 --context 4k \
  --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
stamp peer $?
grep -E '^\| llama' "$R/peer.md"
for round in 1 2; do
  for build in base new var; do
    h=$BUILD/tools/hone/hone
    [ "$build" = new ] && h=./var_hone
    [ "$build" = var ] && h=var2/var_hone
    mkdir -p "$R/cache_${build}_$round"
    HONE_CACHE_DIR=$R/cache_${build}_$round timeout "$(cap 45)" "$h" step --model "$M" --batch 1 \
      --context 4k --quant int4:g64 --samples 9 --no-breakdown --json "$R/step_${build}_$round.json" \
      >"$R/step_${build}_$round.log" 2>&1
    stamp "step $build $round" $?
    grep -E '^\| default' "$R/step_${build}_$round.log" | sed "s/^/$build /"
  done
  pack
done

#!/usr/bin/env bash
# One call (~7 min): the staged group parameters with the grid rule (two CTAs an SM or more).
# The kernel test (with StagedParametersMatchTheReferenceAndTheirOrder) and the op test on
# reduced shapes; the same kernel test built with the staged copies reading the next row's
# parameters (broken_kernel_test: it must fail); compute-sanitizer memcheck and racecheck of the
# staged test; the harness of the build before and this one once each on the four Llama-3.1-8B
# int4 g64 linears at rows 1, 4, 8; then the int4 g64 decode step against the PyTorch peer.
#
#   tar xJf .carry/call7.tar.xz && scripts/device/call_staged2.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin staged2 570 "${1:?OUTDIR}" build
for t in qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure|OK \] .*Staged' "$R/test_$t.log" | head -8
done
chmod +x prev_harness
if [ -x ./broken_kernel_test ]; then
  timeout "$(cap 60)" ./broken_kernel_test --gtest_filter='*Staged*' >"$R/broken.log" 2>&1
  stamp "broken staging (must fail)" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/broken.log" | head -4
fi
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  HONE_TEST_PATHS=mma timeout "$(cap 100)" "$CS" --tool $tool --error-exitcode 9 \
    "$BUILD/tests/device/qmv_affine_kernel_test" --gtest_filter='*Staged*' >"$R/$tool.log" 2>&1
  stamp "$tool staged" $?
  grep -hE '^\[  (PASSED|FAILED) |ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$R/$tool.log" | head -4
done
pack
for round in 1 2; do
  for which in before after; do
    bin=$BUILD/bench/qmv_affine_harness
    [ $which = before ] && bin=./prev_harness
    HONE_TEST_PATHS=mma timeout "$(cap 60)" "$bin" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8 --formats 4x64 \
      --csv "$R/ab_${which}_$round.csv" >"$R/ab_${which}_$round.log" 2>&1
    stamp "harness $which round $round" $?
    grep -E '^4x' "$R/ab_${which}_$round.log" | sed "s/^/$which /" | cut -c1-100
  done
done
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

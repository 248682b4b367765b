#!/usr/bin/env bash
# One call (~9 min): the decode linears' first weights before griddepcontrol.wait.
# gemv.bf16's and qmv.affine's register-pipeline mma kernels now issue their first J chunks of
# weights (and group parameters) before the wait, and gemv.bf16's one-row fma kernels ask L2
# for their first step; every other kernel waits at its entry as before (docs/notes/
# decode_step.md). In order:
#   1. the device tests of both ops, the step's PDL tests and the step's reference test
#      (reduced shapes; bitwise checks of PDL against PDL off);
#   2. the PyTorch bf16 peer of the Llama-3.1-8B step (batch 1, 4k);
#   3. the step at its default tactics (no cache), int4 g64 (twice) and bf16 (once), by this
#      build and by the build before the change (.carry/prev_hone.xz, 2a084ea), in turn: the A/B
#      of the change (default+pdl and default+pdl+silu are the variants it reaches);
#   4. the int4 g64 step with its four layer linears tuned at one row in tolerance mode, then
#      the bf16 step likewise (issue 14's two bars);
#   5. compute-sanitizer memcheck and racecheck of the qmv.affine kernel test, where time is left.
# Everything lands in OUTDIR/early_wait.tar.gz, packed after each step.
#
#   tar xJf .carry/bin.tar.xz && [BUDGET=SECONDS] scripts/device/call_early_wait.sh "$OUT" build
set -u
source "$(dirname "$0")/env.sh"
run_begin early_wait "${BUDGET:-585}" "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
MODEL=models/llama-3.1-8b.json
PREV=$R/prev_hone
xz -dc .carry/prev_hone.xz >"$PREV" && chmod +x "$PREV"

export HONE_DEVICE_TEST_REDUCED=1
for t in qmv_affine_kernel_test qmv_affine_op_test gemv_bf16_kernel_test gemv_bf16_op_test \
  step_ops_pdl_test decode_step_reference_test quantized_linear_op_test; do
  timeout "$(cap 90)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "$t" $?
  grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED' "$R/test_$t.log" | head -4
done
unset HONE_DEVICE_TEST_REDUCED
pack

timeout "$(cap 60)" python3 bench/peers/decode_step_torch.py --model "$MODEL" --batch 1 \
  --context 4k --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
stamp "peer (PyTorch, bf16)" $?
grep -E '^\| llama' "$R/peer.md"

# The A/B at the default tactics: an empty cache for each run.
for round in 1 2; do
  quants="int4:g64 bf16"
  [ $round = 2 ] && quants=int4:g64
  for quant in $quants; do
    for which in new prev; do
      [ "$(left)" -lt 200 ] && break 3
      bin=$H
      [ $which = prev ] && bin=$PREV
      tag=ab_${quant%%:*}_${which}_$round
      mkdir -p "$R/empty_$tag"
      HONE_CACHE_DIR=$R/empty_$tag timeout "$(cap 45)" "$bin" step --model "$MODEL" --batch 1 \
        --context 4k --quant "$quant" --fuse-silu-mul --samples 9 --json "$R/$tag.json" \
        >"$R/$tag.log" 2>&1
      stamp "step $tag" $?
      rmdir "$R/empty_$tag" 2>/dev/null
      grep -E '^\| (default|tuned)' "$R/$tag.log" | sed "s/^/$tag /" | cut -c1-110
    done
  done
done
rm -f "$PREV"
pack

# The tuned steps (this build): the four layer linears at one row, tolerance numerics.
for spec in "int4_g64 qmv.affine int4:g64 60 --bits 4 --group 64" "bf16 gemv.bf16 bf16 80"; do
  read -r name op quant budget format <<<"$spec"
  [ "$(left)" -lt $((budget + 60)) ] && { stamp "tuned $name skipped: too little time" 1; continue; }
  cache=$R/cache_$name
  mkdir -p "$cache"
  HONE_CACHE_DIR=$cache timeout "$(cap $((budget + 20)))" "$H" tune --model "$MODEL" --rows 1 \
    --ops "$op" $format --numerics tolerance --budget "${budget}s" --json "$R/tune_$name.json" \
    >"$R/tune_$name.log" 2>&1
  stamp "tune $name" $?
  HONE_CACHE_DIR=$cache timeout "$(cap 50)" "$H" step --model "$MODEL" --batch 1 --context 4k \
    --quant "$quant" --fuse-silu-mul --samples 9 --json "$R/step_$name.json" \
    >"$R/step_$name.log" 2>&1
  stamp "step $name (tuned)" $?
  sed -n '/| variant/,/^$/p' "$R/step_$name.log"
  pack
done

if [ "$(left)" -gt 100 ]; then
  export HONE_DEVICE_TEST_REDUCED=1
  timeout "$(cap 30)" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BUILD/tests/device/qmv_affine_kernel_test" >"$R/qmv_kernel_memcheck.log" 2>&1
  stamp "qmv_affine_kernel_test memcheck" $?
  HONE_DEVICE_TEST_REDUCED=2 timeout "$(cap 100)" compute-sanitizer --tool racecheck \
    --error-exitcode 3 "$BUILD/tests/device/qmv_affine_kernel_test" \
    >"$R/qmv_kernel_racecheck.log" 2>&1
  stamp "qmv_affine_kernel_test racecheck" $?
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$R"/qmv_kernel_*check.log
fi
pack

#!/usr/bin/env bash
# One call (~5 min, either device): qmv.affine.silu_mul, the decode step's int4 gate/up linear
# with SiLU x up fused as an op of its own, first on a GPU.
#   1. the device tests on reduced shapes: qmv_affine_op_test (the fused op's gate of every
#      candidate, the fused launch bit for bit against the linear then silu_mul for every config
#      with the epilogue), decode_step_reference_test, step_ops_pdl_test; memcheck of the fused
#      tests;
#   2. the int4 g64 tune of the four layer linears and the fused gate/up at one row (tolerance),
#      then the step with that cache, twice, with the separate SiLU launch beside the fused
#      default, and the PyTorch bf16 peer.
# Everything lands in OUT/fused_op.tar.gz.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_fused_op.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin fused_op "${BUDGET:-500}" "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
MODEL=models/llama-3.1-8b.json

export HONE_DEVICE_TEST_REDUCED=1
for t in qmv_affine_op_test decode_step_reference_test step_ops_pdl_test; do
  timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
  stamp "test $t" $?
  grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED|fused config' "$R/test_$t.log" | head -6
done
timeout "$(cap 120)" compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$BUILD/tests/device/qmv_affine_op_test" --gtest_filter='*Silu*' >"$R/memcheck_silu.log" 2>&1
stamp "memcheck qmv_affine_op_test *Silu*" $?
grep -hE 'PASSED|FAILED|ERROR SUMMARY' "$R/memcheck_silu.log" | head -4
unset HONE_DEVICE_TEST_REDUCED
pack

timeout "$(cap 60)" python3 bench/peers/decode_step_torch.py --model "$MODEL" --batch 1 \
  --context 4k --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
stamp "peer (PyTorch, bf16)" $?
grep -E '^\| llama' "$R/peer.md"

cache=$R/cache_int4_g64
mkdir -p "$cache"
HONE_CACHE_DIR=$cache timeout "$(cap 150)" "$H" tune --model "$MODEL" --rows 1 \
  --ops qmv.affine,qmv.affine.silu_mul --bits 4 --group 64 --numerics tolerance --budget 110s \
  --json "$R/tune_int4_g64.json" >"$R/tune_int4_g64.log" 2>&1
stamp "tune int4 g64 (tolerance: four layer linears, fused gate/up)" $?
grep -E '^qmv' "$R/tune_int4_g64.log" | cut -c1-250
pack

for round in 1 2; do
  [ "$(left)" -lt 30 ] && break
  tag=step_$round
  HONE_CACHE_DIR=$cache timeout "$(cap 50)" "$H" step --model "$MODEL" --batch 1 --context 4k \
    --quant int4:g64 --separate-silu-mul --samples 9 --json "$R/$tag.json" >"$R/$tag.log" 2>&1
  stamp "$tag" $?
  grep -E '^\| (default|tuned)' "$R/$tag.log" | sed "s/^/$tag /" | cut -c1-100
done
pack

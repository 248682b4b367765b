#!/usr/bin/env bash
# One call (~6 min, either device): the leaner register-pipeline loop of qmv.affine's
# parameter-vector kernels (the block's addresses from its first chunk as an unsigned offset;
# the `ahead=2` kernels' activation look-ahead without its guard inside the full chunks), first
# on a GPU, with the same loop plus fragments alternating between two sets (ping-pong) beside
# it. Three builds, in one archive (`.carry/ab.tar.xz`: build/ holds this tree's five programs
# the call runs, ab/ the ping-pong variant's harness and kernel test and the build before both's
# harness and hone, solid-compressed to stay inside the carry limit beside the working tree).
#   1. the kernel and op tests (reduced shapes: every config against the reference, and bit for
#      bit against the configs of its K order), the ping-pong kernel test, the step reference;
#   2. the qmv table (mma path, int4 g64, rows 1, 4 and 8: gate_up, down, qkv and o of
#      Llama-3.1-8B) by the three harnesses in turn, ROUNDS times (default 2);
#   3. `hone step` (int4 g64, batch 1, context 4k, default tactics: qkv and gate_up run the
#      `ahead=2` kernel) by this build and the build before, in turn, twice.
# Everything lands in OUT/lean_loop.tar.gz.
#
#   scripts/device/call_lean_loop.sh OUT
set -u
source "$(dirname "$0")/env.sh"
tar xJf .carry/ab.tar.xz && chmod +x ab/*
run_begin lean_loop "${BUDGET:-570}" "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
MODEL=models/llama-3.1-8b.json
V=ab

export HONE_DEVICE_TEST_REDUCED=1
for t in qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test pp; do
  bin=$BUILD/tests/device/$t
  [ $t = pp ] && bin=$V/pp_qmv_affine_kernel_test
  timeout "$(cap 90)" "$bin" >"$R/test_$t.log" 2>&1
  stamp "test $t" $?
  grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED' "$R/test_$t.log" | head -4
done
unset HONE_DEVICE_TEST_REDUCED
pack

for round in $(seq "${ROUNDS:-2}"); do
  for which in base lean pp; do
    bin=$BUILD/bench/qmv_affine_harness
    [ $which = base ] && bin=$V/base_qmv_affine_harness
    [ $which = pp ] && bin=$V/pp_qmv_affine_harness
    HONE_TEST_PATHS=mma timeout "$(cap 90)" "$bin" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8 --formats 4x64 \
      --csv "$R/table_${which}_$round.csv" >"$R/table_${which}_$round.log" 2>&1
    stamp "table $which round $round" $?
  done
done
pack

for round in 1 2; do
  for which in lean prev; do
    [ "$(left)" -lt 60 ] && break 2
    bin=$H
    [ $which = prev ] && bin=$V/prev_hone
    tag=step_${which}_$round
    mkdir -p "$R/empty_$tag"
    HONE_CACHE_DIR=$R/empty_$tag timeout "$(cap 45)" "$bin" step --model "$MODEL" --batch 1 \
      --context 4k --quant int4:g64 --samples 9 --json "$R/$tag.json" >"$R/$tag.log" 2>&1
    stamp "$tag" $?
    rmdir "$R/empty_$tag" 2>/dev/null
    grep -E '^\| (default|tuned)' "$R/$tag.log" | sed "s/^/$tag /" | cut -c1-110
  done
done
pack

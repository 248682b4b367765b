#!/usr/bin/env bash
# The chain changes of 2026-12-05 (third stop), first run: decode.paged's L2 prefetch before its
# wait (ChainLaunch::prefetch_kib), rope with the K/V append and bias in one launch
# (RopeTensors::append, StepOptions::fuse_rope_append), and qmv.affine's two-m16-tile ring
# kernels for 17-32 rows. Tests first (each bitwise against the separate or PDL-off path), then
# memcheck of the new kernel paths, then hone step on Llama-3.1-8B (bf16 and int4 g64, batch 1,
# context 4k) with the prefetch variant and the fused launch, then the qmv table at 24-32 rows.
# Runs over carried programs (scripts/device/pack_carry.sh); everything lands in
# OUTDIR/chain_fusions.tar.gz, packed after each step. About 6 minutes.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/chain_fusions.sh "$OUT" build
set -u
source "$(dirname "$0")/env.sh"
run_begin chain_fusions 560 "${1:?OUTDIR}" "${2:-build}"

# 1. Tests.
timeout 120 "$BUILD/tests/device/rope_op_test" >"$R/test_rope.log" 2>&1
stamp rope_op_test $?
# The linear chains (every kernel path; the ring's consumers now wait only before they write y;
# the weights-once twins) over 1000 graph replays, the other chains over 20
# (HONE_DEVICE_TEST_REDUCED): every PDL variant of the steps below is checked over 1000 replays
# of the whole step.
timeout 120 "$BUILD/tests/device/step_ops_pdl_test" --gtest_filter='*Linears*:*WeightsOnce*' \
  >"$R/test_step_ops_pdl.log" 2>&1
stamp "step_ops_pdl_test (linears, 1000 replays)" $?
HONE_DEVICE_TEST_REDUCED=1 timeout 120 "$BUILD/tests/device/step_ops_pdl_test" \
  --gtest_filter='-*Linears*:*WeightsOnce*' >>"$R/test_step_ops_pdl.log" 2>&1
stamp step_ops_pdl_test $?
LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 \
  "$BUILD/tests/device/c_api_rope_kv_append_bf16_test" >"$R/test_c_api_rope_kv_append.log" 2>&1
stamp c_api_rope_kv_append_bf16_test $?
timeout 150 "$BUILD/tests/device/decode_step_reference_test" \
  --gtest_filter='*Fused*:*APrefillOfOneToken*:*OneStepMatchesFloat64/llama_bf16:*OneStepMatchesFloat64/qwen2_bf16' \
  >"$R/test_decode_step.log" 2>&1
stamp decode_step_reference_test $?
HONE_DEVICE_TEST_REDUCED=1 timeout 120 "$BUILD/tests/device/decode_paged_op_test" \
  >"$R/test_decode_paged.log" 2>&1
stamp decode_paged_op_test $?
HONE_TEST_PATHS=mma,ring HONE_DEVICE_TEST_REDUCED=1 timeout 60 \
  "$BUILD/tests/device/qmv_affine_kernel_test" >"$R/test_qmv_kernel.log" 2>&1
stamp qmv_affine_kernel_test $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R"/test_*.log | head -20
pack

# 2. memcheck of the new paths.
for t in rope_op_test:*Fused* step_ops_pdl_test:*Prefetching*; do
  [ "$(left)" -lt 20 ] && break
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 90)" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BUILD/tests/device/${t%%:*}" --gtest_filter="${t#*:}" >"$R/sanitizer.raw" 2>&1
  echo "memcheck ${t}: rc $? $(grep -E 'ERROR SUMMARY|\[  (PASSED|FAILED) ' "$R/sanitizer.raw" | tr '\n' ' ')" |
    tee -a "$R/sanitizer.log"
  grep -m 10 -E 'Invalid|Failure' "$R/sanitizer.raw" >>"$R/sanitizer.log"
  rm -f "$R/sanitizer.raw"
done
pack

# 3. The step: the tuned PDL step beside the same with decode.paged's KV prefetch at 64 and 256
# KiB per CTA, with the fused rope append, and with the linears' weights-once ring twins (their
# weights start before the wait), every variant in the same run and each PDL variant checked bit
# for bit against the (separate, PDL-off) step over 1000 replays.
step() {
  local name=$1
  shift
  [ "$(left)" -lt 20 ] && return
  timeout "$(cap 150)" "$BUILD/tools/hone/hone" step --model models/llama-3.1-8b.json --batch 1 \
    --context 4k --samples 9 --json "$R/step_$name.json" "$@" >"$R/step_$name.log" 2>&1
  stamp "step $name" $?
  sed -n '/| variant/,/^$/p' "$R/step_$name.log"
  pack
}
step bf16 --quant bf16 --kv-prefetch 64,256 --separate-rope-append --weights-once
step int4_g64 --quant int4:g64 --kv-prefetch 64,256 --separate-rope-append --weights-once

# 4. qmv.affine: the two-m16-tile ring kernels at 24-32 rows against the rest, and the grouped
# kernels (2.22 instructions per weight since 42462ce, never timed) at 1-4 rows where they won.
[ "$(left)" -lt 20 ] && exit 0
HONE_TEST_PATHS=mma,ring,grouped timeout "$(cap 90)" "$BUILD/bench/qmv_affine_harness" --no-check \
  --shapes 28672x4096,4096x14336 --rows 1,4,24,32 --formats 4x64 \
  --csv "$R/qmv_table.csv" >"$R/qmv_table.log" 2>&1
stamp qmv_table $?
cut -c1-220 "$R/qmv_table.log" | tail -n 10
pack

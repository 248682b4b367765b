#!/usr/bin/env bash
# One call (~6 min on an H200): issue 14's step bars with the chain tactic early=1 (rmsnorm
# letting the next kernel start at its own start). First the step's device tests of early=1
# (against the PDL-off step, bit for bit) and of the fusions, and step_ops_pdl_test (the early
# trigger's graph replays with poisoned intermediates). The PyTorch bf16 peer of the Llama-3.1-8B
# step (batch 1, context 4k); its int4 g64 linears tuned at one row in tolerance numerics
# (TUNE_BUDGET, default 100 s; `deep=2` a candidate); the chain cells of batch 1 (bf16 and int4
# g64: PDL off, on, with the KV prefetch, with the early trigger, each checked over 1000 replays)
# tuned into the same cache; then `hone step` int4 g64 and bf16, which run the cached chain pick
# as their tuned step and time the others, same run as the peer; then Qwen2.5-1.5B's int4 g64
# step, untuned. QUICK=1: the peer, the linears' tune and the int4 g64 step alone (below).
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_step_bars.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin step_bars "${BUDGET:-560}" "${1:?OUTDIR}" build
H=$BUILD/tools/hone/hone
M=models/llama-3.1-8b.json
unset HONE_CACHE HONE_AUTOTUNE
cat "$R/gpu.txt"
# tune_chain SECONDS: the chain cells of batch 1 (int4 g64) tuned into this run's cache.
tune_chain() {
  HONE_CACHE_DIR=$R/cache timeout "$(cap "$1")" "$H" --backend cuda tune --model "$M" \
    --ops chain.decode_step --bits 4 --group 64 --chain-batches 1 --json "$R/tune_chain.json" \
    >"$R/tune_chain.log" 2>&1
  stamp "tune the chain cells of batch 1" $?
}
if [ "${QUICK:-0}" = 1 ]; then
  # QUICK=1 (~2.5 min, for a short device budget; 2026-12-07-5 call2 took 19 s for the peer, 27
  # for the chain tune, 9 and 19 for the two steps): the peer, the int4 g64 linears tuned for
  # TUNE_BUDGET (default 45 s), the chain cells of batch 1, the int4 g64 and bf16 steps; no tests.
  peer_and_int4_tune "$M" "$R/cache" "${TUNE_BUDGET:-45}"
  pack
  tune_chain 60
  time_step step_int4_g64 "$M" int4:g64 --no-breakdown
  time_step step_bf16 "$M" bf16 --no-breakdown
  exit 0
fi
HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/decode_step_reference_test" \
  --gtest_filter='*EarlyTrigger*:*SeparateLaunchesBitForBit*' >"$R/test_step.log" 2>&1
stamp "step tests (the early trigger against PDL off, the fusions)" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_step.log" | head -6
device_tests step_ops_pdl_test
peer_and_int4_tune "$M" "$R/cache" "${TUNE_BUDGET:-100}"
pack
tune_chain 150
grep -E '^chain' "$R/tune_chain.log"
pack
time_step step_int4_g64 "$M" int4:g64 --no-breakdown
time_step step_bf16 "$M" bf16 --no-breakdown
# Qwen2.5-1.5B int4 g64 (untuned): PDL alone against the early trigger, same run.
time_step step_qwen_int4_g64 models/qwen2.5-1.5b.json int4:g64 --no-breakdown

#!/usr/bin/env bash
# One call (~5 min on an H100, ~8 on an H200 with its tune): one L1 / shared-memory split for a
# whole decode step's chain (model::StepLaunch::shared_carveout, `hone step --carveout`), against
# each kernel's own split as the driver picks it (the default), same run. No bit changes: each
# variant is checked against its own launches without PDL over 1000 replays.
# - The PyTorch bf16 peer of the Llama-3.1-8B step (batch 1, context 4k); on an H200 the int4
#   g64 linears tuned at one row in tolerance numerics first (TUNE_BUDGET, default 100 there, 0
#   elsewhere); then the int4 g64 step, the bf16 step and Qwen2.5-1.5B's int4 g64 step, each
#   with the splits in CARVEOUTS (default 100,50) beside the default.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_carveout.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin carveout "${BUDGET:-560}" "${1:?OUTDIR}" build
M=models/llama-3.1-8b.json
unset HONE_CACHE HONE_AUTOTUNE
cat "$R/gpu.txt"
tune_budget=0
grep -q H200 "$R/gpu.txt" && tune_budget=100
splits=${CARVEOUTS:-100,50}
peer_and_int4_tune "$M" "$R/cache" "${TUNE_BUDGET:-$tune_budget}"
pack
time_step step_int4 "$M" int4:g64 --carveout "$splits"
time_step step_bf16 "$M" bf16 --carveout "$splits" --no-breakdown
[ "$(left)" -gt 90 ] &&
  time_step step_qwen_int4 models/qwen2.5-1.5b.json int4:g64 --carveout "$splits" --no-breakdown
pack

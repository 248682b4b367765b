#!/usr/bin/env bash
# The next session's first call, on whichever card comes (~4 min on an H100, ~7 on an H200):
# call_gate_rmsnorm.sh (the device-side gate counts and rmsnorm's few-rows default: tests, two
# rmsnorm-only tunes compared, a whole tune's wall and gate time), then on an H200
# call_deep_tactic.sh (whether the tune takes `deep=2` there, and the int4 g64 step against
# issue 14's 2.5x the peer), so that one machine's start serves both.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_next.sh OUT
set -u
here=$(dirname "$0")
BUDGET=${GATE_BUDGET:-250} bash "$here/call_gate_rmsnorm.sh" "${1:?OUTDIR}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  BUDGET=${DEEP_BUDGET:-300} TUNE_BUDGET=${TUNE_BUDGET:-120} bash "$here/call_deep_tactic.sh" "$1"
fi

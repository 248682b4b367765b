#!/usr/bin/env bash
# The first call of a session, by the card it lands on (~9-10 min, or ~3 without BASE):
# - on an H200, issue 14's two step bars on this build (step_tolerance.sh: the PyTorch bf16 peer,
#   then the bf16 and int4 g64 decode steps, default / tuned, PDL on and off);
# - on another card, with BASE (the build before's qmv.affine harness): call_defaults_ab.sh, the
#   qmv.affine tests, then this build's harness against BASE (and VAR when set) with BASE_HONE's
#   batch-16 int4 step beside this build's;
# - on another card without BASE: the qmv.affine tests, then qmm_rows_in_tile.sh.
#
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/base.tar.xz && \
#     VAR=./var_harness BASE_HONE=./base_hone scripts/device/call_either.sh OUT ./base_harness
set -u
OUT=${1:?OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/card.txt"
if grep -q H200 "$OUT/card.txt"; then
  bash scripts/device/step_tolerance.sh "$OUT" build >"$OUT/step_tolerance.out" 2>&1
  echo "step_tolerance rc=$?"
  tail -n 40 "$OUT/step_tolerance.out"
elif [ -n "${2:-}" ]; then
  bash scripts/device/call_defaults_ab.sh "$OUT" "$2"
else
  (
    source scripts/device/env.sh
    run_begin tests 200 "$OUT" build
    device_tests qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test \
      step_ops_pdl_test
    pack
  )
  bash scripts/device/qmm_rows_in_tile.sh "$OUT"
fi

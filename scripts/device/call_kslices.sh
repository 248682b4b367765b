#!/usr/bin/env bash
# One call (~5 min): qmv.affine's slices of one chunk on the small matrices (k_slices up to the
# power of two above the chunk count, the last slice empty; docs/notes/qmv_affine.md, v27).
# - The kernel and op tests on the reduced shapes (1000 x 1152 and 256 x 384 now run configs of
#   more slices than chunks, against the reference and their order's bits); memcheck of the mma
#   path's configs on the minimal shape.
# - The harness (mma path, every config) on the matrices where hone trailed PyTorch's int4
#   kernel at one row (docs/benchmark_results/2026-12-07-6, qmv_torch_peer) and 8960 x 1536, whose
#   default K split the refitted rule moves (notes v28), int4 g64 and g128, rows 1, 8, 16 and 32,
#   beside the default: the best time of each K split says which split a shape's default (and so
#   every row count's K order) should take.
# Then, in the same call: MATRICES=... qmv_torch_peer.sh at rows 1 on the small matrices.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_kslices.sh OUT
set -u
source "$(dirname "$0")/env.sh"
run_begin kslices "${BUDGET:-240}" "${1:?OUTDIR}" build
cat "$R/gpu.txt"
device_tests qmv_affine_kernel_test qmv_affine_op_test
pack
HONE_TEST_PATHS=mma timeout "$(cap 200)" "$BUILD/bench/qmv_affine_harness" --no-check \
  --shapes 896x896,1152x896,9728x896,1536x1536,2048x1536,2048x2048,4096x4096,896x4864,17920x1536,8960x1536 \
  --rows 1,8,16,32 \
  --formats 4x64,4x128 --csv "$R/harness.csv" >"$R/harness.log" 2>&1
stamp harness $?
pack
HONE_DEVICE_TEST_REDUCED=2 HONE_TEST_PATHS=mma timeout "$(cap 60)" compute-sanitizer \
  --tool memcheck --error-exitcode 3 "$BUILD/tests/device/qmv_affine_kernel_test" \
  --gtest_filter='*EveryConfigMatchesReference*' >"$R/memcheck.raw" 2>&1
stamp "memcheck mma" $?
grep -E 'ERROR SUMMARY|\[  (PASSED|FAILED) ' "$R/memcheck.raw" | tee "$R/memcheck.log"
grep -m 10 -E 'Invalid|Failure' "$R/memcheck.raw" >>"$R/memcheck.log"
rm -f "$R/memcheck.raw"
pack

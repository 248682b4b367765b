#!/usr/bin/env bash
# Builds the programs the device scripts run (weight_ring.sh, qmm_affine.sh, profile.sh,
# chain_fusions.sh) on this
# machine, with the full qmm.affine kernel set, and packs them into one archive for the device
# tool's carry (64 MiB for all carried paths). On the GPU machine, unpack it at the repository
# root before running a script over the build:
#
#   scripts/device/pack_carry.sh [BUILD_DIR]        # here: builds, writes .carry/bin.tar.xz
#   tar xJf .carry/bin.tar.xz && scripts/device/weight_ring.sh out build   # there
#
# BUILD_DIR (default build) must be a build of this tree; it is configured if it is not. The
# archive holds the programs only (no objects), under BUILD_DIR's relative path. Each program
# links the whole library, so they share most of their bytes: xz with a dictionary larger than
# the programs (256 MiB; as much memory to unpack) packs 13 of them, ~400 MB, into ~10 MB where
# gzip's 32 KB window left 74 MB. Exits 1 when the archive would not fit the carry.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
programs=(tests/device/qmv_affine_kernel_test tests/device/qmv_affine_op_test
          tests/device/gemv_bf16_kernel_test tests/device/gemv_bf16_op_test
          tests/device/qmm_affine_op_test tests/device/quantized_linear_op_test
          tests/device/step_ops_pdl_test tests/device/rope_op_test
          tests/device/decode_step_reference_test tests/device/decode_paged_op_test
          bench/qmv_affine_harness bench/gemv_bf16_harness
          bench/read_ceiling bench/qmm_probe bench/op_matrix tools/hone/hone
          lib/libhone.so tests/device/c_api_rope_kv_append_bf16_test
          tests/device/rmsnorm_op_test tests/device/silu_mul_op_test
          tests/device/gate_counts_test tests/device/rmsnorm_row_test
          tests/device/linear_norm_test)
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHONE_CUDA_ARCHS=90 \
    -DHONE_QMM_TACTICS=full
targets=()
for p in "${programs[@]}"; do
  case $p in
    tools/hone/hone) targets+=(hone_tool) ;;
    lib/libhone.so) targets+=(hone_c) ;; # the C API's tests find it through LD_LIBRARY_PATH
    *) targets+=("$(basename "$p")") ;;
  esac
done
cmake --build "$build" --target "${targets[@]}"
mkdir -p .carry
tar cf - "${programs[@]/#/$build/}" | xz -T1 --lzma2=preset=1,dict=256MiB >.carry/bin.tar.xz
bytes=$(stat -c %s .carry/bin.tar.xz)
echo "pack_carry: .carry/bin.tar.xz, $((bytes / 1048576)) MiB of ${#programs[@]} programs"
[ "$bytes" -lt $((60 * 1048576)) ] || { echo "pack_carry: over the carry's 64 MiB" >&2; exit 1; }

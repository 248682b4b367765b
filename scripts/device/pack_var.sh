#!/usr/bin/env bash
# Builds the qmv.affine harness, kernel and op tests and `hone` of this tree with one
# compile-time flag turned on (`inline constexpr bool FLAG = false;` in FILE), packs them into
# .carry/var.tar.xz as var_harness, var_kernel_test, var_op_test and var_hone, then turns the flag
# off again and rebuilds, so that BUILD_DIR is this tree's build once more. For
# call_defaults_ab.sh's VAR and VAR_TEST (~5 min here):
#
#   scripts/device/pack_var.sh src/cuda/kernels/qmv_affine/qmv_affine.cuh kQmvMmaPingPong [BUILD_DIR]
#   # there: tar xJf .carry/var.tar.xz && VAR=./var_harness VAR_TEST=./var_kernel_test ...
set -euo pipefail
cd "$(dirname "$0")/../.."
file=${1:?FILE}
flag=${2:?FLAG}
build=${3:-build}
off="inline constexpr bool $flag = false;"
on="inline constexpr bool $flag = true;"
grep -qF "$off" "$file" || { echo "pack_var: '$off' is not in $file" >&2; exit 2; }
restore() { sed -i "s/$on/$off/" "$file"; }
trap restore EXIT
sed -i "s/$off/$on/" "$file"
cmake --build "$build" --target qmv_affine_harness qmv_affine_kernel_test qmv_affine_op_test hone_tool
tmp=$(mktemp -d)
cp "$build/bench/qmv_affine_harness" "$tmp/var_harness"
cp "$build/tests/device/qmv_affine_kernel_test" "$tmp/var_kernel_test"
cp "$build/tests/device/qmv_affine_op_test" "$tmp/var_op_test"
cp "$build/tools/hone/hone" "$tmp/var_hone"
mkdir -p .carry
(cd "$tmp" && tar cf - var_harness var_kernel_test var_op_test var_hone) |
  xz -T1 --lzma2=preset=1,dict=256MiB >.carry/var.tar.xz
rm -rf "$tmp"
restore
trap - EXIT
cmake --build "$build" --target qmv_affine_harness qmv_affine_kernel_test qmv_affine_op_test hone_tool
echo "pack_var: .carry/var.tar.xz ($flag on), $(du -h .carry/var.tar.xz | cut -f1)"

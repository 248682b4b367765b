#!/usr/bin/env bash
# The carry of scripts/device/call_batches.sh: three builds of the programs pack_carry.sh packs,
# main and main with each of the batched-lookahead patches applied, as .carry/batches.tar.xz
# (docs/notes/patches/qmm_tma_wgmma_batches.patch), .carry/batches8.tar.xz
# (qmm_tma_wgmma_batches8.patch) and .carry/bin.tar.xz (main, built last so that BUILD_DIR ends
# as main's build). A patch touches two files; they are restored from git after each build, so
# the working tree must have no changes to them. 52 MB in all, under the carry's 64 MiB.
#
#   scripts/device/pack_batches_carry.sh [BUILD_DIR]   # 20-40 min on 2 cores from an empty build
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
files=(src/cuda/kernels/qmm_affine/qmm_affine_tma.cuh tests/device/qmm_affine_op_test.cpp)
git diff --quiet -- "${files[@]}" || { echo "pack_batches_carry: ${files[*]} have changes" >&2; exit 1; }
restore() { git checkout -- "${files[@]}"; }
trap restore EXIT
for form in batches batches8; do
  git apply "docs/notes/patches/qmm_tma_wgmma_$form.patch"
  scripts/device/pack_carry.sh "$build"
  mv .carry/bin.tar.xz ".carry/$form.tar.xz"
  restore
done
scripts/device/pack_carry.sh "$build"
ls -l .carry

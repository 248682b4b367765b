#!/usr/bin/env bash
# The carry of scripts/device/call_multicast.sh: qmm_probe and qmm_affine_op_test built with
# docs/notes/patches/qmm_tma_multicast.patch applied (the TMA engine's multicast kernels), packed
# as .carry/mc.tar.xz (about 8 MB; beside call_batches.sh's three archives, 52 MB, under the
# carry's 64 MiB). The patch's files are restored from git afterwards and BUILD_DIR rebuilt from
# them when it was built before, so the working tree must have no changes to them.
#
#   scripts/device/pack_multicast_carry.sh [BUILD_DIR]   # a few minutes over an existing build
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
patch=docs/notes/patches/qmm_tma_multicast.patch
mapfile -t files < <(git apply --numstat "$patch" | cut -f3)
git diff --quiet -- "${files[@]}" || { echo "pack_multicast_carry: ${files[*]} have changes" >&2; exit 1; }
restore() { git checkout -- "${files[@]}"; }
trap restore EXIT
git apply "$patch"
[ -f "$build/CMakeCache.txt" ] ||
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHONE_CUDA_ARCHS=90 \
    -DHONE_QMM_TACTICS=full
ninja -C "$build" qmm_probe qmm_affine_op_test
mkdir -p .carry
# One leading folder (call_multicast.sh unpacks with --strip-components=1).
tar -cf - -C "$build" --transform='s,^,build/,' bench/qmm_probe tests/device/qmm_affine_op_test |
  xz -9e --lzma2=dict=64MiB >.carry/mc.tar.xz
restore
trap - EXIT
ninja -C "$build" qmm_probe qmm_affine_op_test >/dev/null
ls -l .carry

#!/usr/bin/env bash
# The carry of scripts/device/call_batch_landing.sh: qmm_affine_op_test and qmm_probe of this
# tree's build, packed as .carry/landing.tar.xz (about 10 MB) under build/.
#
#   scripts/device/pack_landing_carry.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ninja -C "$build" qmm_probe qmm_affine_op_test
mkdir -p .carry
tar -cf - -C "$build" --transform='s,^,build/,' bench/qmm_probe tests/device/qmm_affine_op_test |
  xz -T1 --lzma2=preset=6,dict=64MiB >.carry/landing.tar.xz
ls -l .carry/landing.tar.xz

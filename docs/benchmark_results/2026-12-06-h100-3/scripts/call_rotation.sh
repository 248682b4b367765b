#!/usr/bin/env bash
# One call (~3 min, either device): does the rotation depth change the order of gate_up's
# int4 g64 default and the ahead=4 config (docs/notes/qmv_affine.md v16)? bench/op_matrix times
# the default, the tune's pick and the ahead=4 config, interleaved, at one row, with the input
# copies spanning 2, 8 (the tuner's) and 32 times the L2, and warm; for qmv.affine and for the
# fused gate/up (qmv.affine.silu_mul). Everything lands in OUT/rotation.tar.gz.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_rotation.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin rotation "${BUDGET:-330}" "${1:?OUTDIR}" "${2:-build}"
J4=qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=4,outputs_per_warp=16,split_k=1,ahead=4
printf 'quick: rows=1, n=28672, k=4096, bits=4, group=64\n' >"$R/qmv.txt"
printf 'quick: rows=1, inter=14336, k=4096, bits=4, group=64\n' >"$R/silu.txt"
for op in qmv.affine qmv.affine.silu_mul; do
  shapes=$R/qmv.txt
  [ $op = qmv.affine.silu_mul ] && shapes=$R/silu.txt
  for mode in 2 8 32 warm; do
    [ "$(left)" -lt 40 ] && break 2
    flags="--rotate-llc $mode"
    [ $mode = warm ] && flags=--warm
    tag=${op}_$mode
    HONE_CACHE_DIR=$R/cache_$tag timeout "$(cap 60)" "$BUILD/bench/op_matrix" --op $op \
      --shapes "$shapes" --set quick --peers none --also "$J4" --numerics tolerance $flags \
      --json "$R/$tag.json" >"$R/$tag.log" 2>&1
    stamp "op_matrix $tag" $?
    grep -vE '^\s*$' "$R/$tag.log" | tail -n 6 | cut -c1-160
  done
done
pack

#!/usr/bin/env bash
# Issue 13's acceptance matrix (bench/shapes/decode_matrix/OP.txt: the linear shapes of
# Llama-3.1-8B, Qwen2.5-1.5B and Qwen2.5-0.5B and the seven, rows 1-32), one part at a time over
# carried programs (scripts/device/pack_carry.sh). bench/op_matrix tunes every cell into this
# run's own cache, the tune gating every candidate (the default included) against the float64
# reference and, in batch-invariant numerics, row by row bitwise against the rows=1 default; then
# it times default, pick, hone's best own kernel beside a vendor pick, and the peers, interleaved.
# So one part answers "correct, batch-invariant and tuned >= default in every cell" for its
# shapes. PART of PARTS takes every PARTS-th `full:` line of the list, starting at line PART, so
# that parts are alike. NUMERICS tolerance admits gemv.bf16's cuBLASLt candidates (the "vendor
# candidate on" point). Output: OUTDIR/decode_matrix_OP_PARTofPARTS[_NUMERICS].tar.gz.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/decode_matrix.sh "$OUT" build qmv.affine 1 3
#   ... gemv.bf16 1 2 tolerance
# Sizes, from the tunes of 2026-12-05-h100-2 (1-4.5 s a qmv.affine cell): qmv.affine (450 cells)
# in 3 parts, gemv.bf16 (150) in 2, each under 9 minutes. RUN_BUDGET_S (default 570) is the
# run's whole budget in seconds, for a call that runs something before it.
set -u
op=${3:?OP (gemv.bf16 or qmv.affine)}
part=${4:?PART}
parts=${5:?PARTS}
numerics=${6:-}
source "$(dirname "$0")/env.sh"
run_begin "decode_matrix_${op}_${part}of${parts}${numerics:+_$numerics}" "${RUN_BUDGET_S:-570}" "${1:?OUTDIR}" \
  "${2:-build}"
src=bench/shapes/decode_matrix/$op.txt
[ -f "$src" ] || { echo "decode_matrix: no shape list $src" | tee "$R/steps.log"; exit 2; }
grep '^full:' "$src" | awk -v p="$part" -v n="$parts" '(NR - 1) % n == p - 1' >"$R/shapes.txt"
echo "$(wc -l <"$R/shapes.txt") shape lines of $src (part $part of $parts)" | tee "$R/steps.log"
mkdir -p "$R/cache"
export HONE_CACHE_DIR=$R/cache
unset HONE_CACHE HONE_AUTOTUNE HONE_TACTIC_GEMV_BF16 HONE_TACTIC_QMV_AFFINE
timeout "$(($(left) - 15))" "$BUILD/bench/op_matrix" --op "$op" --shapes "$R/shapes.txt" \
  --set full ${numerics:+--numerics "$numerics"} --json "$R/matrix.json" >"$R/matrix.log" 2>&1
stamp "op_matrix $op part $part of $parts ${numerics:-default numerics}" $?
grep -E '^(device|method|tunes|geomean)|cannot run|gate' "$R/matrix.log" | cut -c1-200 | head -20
pack

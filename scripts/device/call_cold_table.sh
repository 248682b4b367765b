#!/usr/bin/env bash
# One call (~2 min, either device): the qmv.affine table with the harness rotating as the tuner
# does (copies spanning 8 x the L2, the group parameters cold): issue 13's int4 fractions of the
# loads-only ceiling of the same words, scales and biases, at rows 1, 4, 8 and 16 on the four
# Llama-3.1-8B linears, int4 g64 and g128. Everything lands in OUT/cold_table.tar.gz.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_cold_table.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin cold_table "${BUDGET:-200}" "${1:?OUTDIR}" "${2:-build}"
for fmt in 4x64 4x128; do
  HONE_TEST_PATHS=mma,ring timeout "$(cap 90)" "$BUILD/bench/qmv_affine_harness" --no-check \
    --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16 --formats $fmt \
    --csv "$R/table_$fmt.csv" >"$R/table_$fmt.log" 2>&1
  stamp "table $fmt" $?
  grep -E '^[48]x' "$R/table_$fmt.log" | cut -c1-125
done
pack

#!/usr/bin/env bash
# Issue 11's table over carried programs (scripts/device/pack_carry.sh): qmm.affine's device
# tests (stream-K over a poisoned workspace, every compiled config on the reduced shapes,
# leftovers), tunes of qmv.affine (rows 1-32) and qmm.affine (rows 24-256) on the four
# Llama-3.1-8B shapes at int4 g64 into this run's own cache, quantized_linear against cuBLASLt
# BF16 dense (bench/op_matrix, the quick set), then memcheck of stream-K. Everything lands in
# OUTDIR/quantized_linear.tar.gz, packed after each step. About 9 minutes. QL_MATRICES (default the
# four: "n=28672,k=4096 n=4096,k=14336 n=4096,k=4096 n=6144,k=4096") narrows the tunes and the
# table, QL_ROWS (default "1 16 24 32 64 48 128 96 256") the row counts; the tunes stop with
# QL_TABLE_RESERVE seconds (default 240) left for the table and memcheck.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/quantized_linear.sh "$OUT" build
set -u
source "$(dirname "$0")/env.sh"
run_begin quantized_linear "${QL_BUDGET:-570}" "${1:?OUTDIR}" "${2:-build}"
T=$BUILD/tests/device/qmm_affine_op_test
H=$BUILD/tools/hone/hone
mkdir -p "$R/cache" "$R/tunes"
export HONE_CACHE_DIR=$R/cache
unset HONE_CACHE HONE_AUTOTUNE HONE_TACTIC_QMM_AFFINE HONE_TACTIC_QUANTIZED_LINEAR \
  HONE_TACTIC_QMV_AFFINE

# 1. Tests.
timeout 100 "$T" --gtest_filter='*StreamK*:QmmAffineHostTest.*' >"$R/test_streamk.log" 2>&1
stamp "qmm_affine_op_test stream-K" $?
HONE_DEVICE_TEST_REDUCED=1 timeout 120 "$T" --gtest_filter='*Mma*:*EveryCompiledTactic*' \
  >"$R/test.log" 2>&1
stamp "qmm_affine_op_test mma, every compiled tactic" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R"/test*.log | head -20
pack

# 2. Tunes: qmv.affine at every decode row count the table has, qmm.affine from 24 rows, the
# cheaper first so that a short budget still covers the table's rows.
tune() {
  local op=$1 r=$2 nk=$3 f ts
  f=$R/tunes/${op}_r${r}_${nk//[=,]/_}.json
  ts=$(date +%s%N)
  timeout 40 "$H" --backend cuda tune --op "$op" --shape "rows=$r,$nk,bits=4,group=64" \
    --json "$f" >>"$R/tune.log" 2>&1
  echo "rc=$? $op rows=$r $nk $((($(date +%s%N) - ts) / 1000000)) ms" >>"$R/tune.log"
}
read -ra matrices <<<"${QL_MATRICES:-n=28672,k=4096 n=4096,k=14336 n=4096,k=4096 n=6144,k=4096}"
read -ra row_list <<<"${QL_ROWS:-1 16 24 32 64 48 128 96 256}"
for r in "${row_list[@]}"; do
  for nk in "${matrices[@]}"; do
    [ "$(left)" -lt "${QL_TABLE_RESERVE:-240}" ] && break 2
    [ "$r" -le 32 ] && tune qmv.affine "$r" "$nk"
    [ "$r" -ge 24 ] && tune qmm.affine "$r" "$nk"
  done
done
(cd "$R" && tar czf tunes.tar.gz tunes && rm -rf tunes)
stamp tunes 0
pack

# 3. quantized_linear against cuBLASLt BF16 dense, the tuned picks of step 2.
: >"$R/shapes.txt"
rows_alt=$(printf '%s\n' "${row_list[@]}" | sort -n | paste -sd'|')
for nk in "${matrices[@]}"; do
  echo "quick: rows=$rows_alt, ${nk/,/, }, bits=4, group=64" >>"$R/shapes.txt"
done
timeout "$(($(left) - 60))" "$BUILD/bench/op_matrix" --op quantized_linear --shapes "$R/shapes.txt" \
  --set quick --samples 7 --also quantized_linear.qmv --also quantized_linear.qmm \
  --json "$R/ql.json" >"$R/ql.log" 2>&1
stamp "op_matrix quantized_linear" $?
grep -E '^\| rows|geomean' "$R/ql.log" | cut -c1-200
pack

# 4. memcheck of stream-K and the leftovers.
HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 50)" compute-sanitizer --tool memcheck --error-exitcode 86 \
  "$T" --gtest_filter='*StreamK*:*MmaPathHandlesLeftovers*' >"$R/sanitizer.log" 2>&1
stamp "memcheck stream-K" $?
tail -n 2 "$R/sanitizer.log"
pack

#!/usr/bin/env bash
# One call (~6-9 min, either device): the first GPU run of a build that changes qmv.affine's
# defaults without changing their K order. The qmv.affine kernel and op tests and the decode
# step's tests on reduced shapes (the op test checks the default's batch invariance at rows
# 1-32), then the harness of the build before (BASE, a program) and of this build in turn, twice,
# on SHAPES (default the four Llama-3.1-8B linears), int4 g64 and g128, at ROWS (default
# 1,4,8,16,24,32). scripts/ab.py of a results folder compares the defaults and every config.
# BASE_HONE (a program, the build before's `hone`) adds the Llama-3.1-8B int4 g64 decode step at
# batch STEP_BATCH (default 16), context 4k, default and PDL, with either build in turn. VAR (a
# program) adds a third harness to each round (scripts/ab.py reads var_* as it reads new_*), and
# VAR_TEST (a program, the variant's qmv_affine_kernel_test; scripts/device/pack_var.sh builds
# both) runs after this build's tests.
#
#   tar xJf .carry/bin.tar.xz && tar xJf .carry/base_65e57e2.tar.xz && \
#     BASE_HONE=./base_hone_65e57e2 scripts/device/call_defaults_ab.sh OUT ./base_65e57e2
set -u
source "$(dirname "$0")/env.sh"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
run_begin defaults_ab "${AB_BUDGET:-560}" "${1:?OUTDIR}" build
base=${2:?BASE harness}
shapes=${SHAPES:-28672x4096,4096x14336,6144x4096,4096x4096}
rows=${ROWS:-1,4,8,16,24,32}
cat "$R/gpu.txt"
device_tests qmv_affine_kernel_test qmv_affine_op_test decode_step_reference_test step_ops_pdl_test
if [ -n "${VAR_TEST:-}" ]; then # the variant's own kernel test (every config, bitwise order checks)
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$VAR_TEST" >"$R/test_var.log" 2>&1
  stamp "var kernel test" $?
  grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_var.log" | head -6
fi
pack
for round in 1 2; do
  for build in base new ${VAR:+var}; do
    h=$BUILD/bench/qmv_affine_harness
    [ "$build" = base ] && h=$base
    [ "$build" = var ] && h=$VAR
    HONE_TEST_PATHS=mma timeout "$(cap 100)" "$h" --no-check --shapes "$shapes" --rows "$rows" \
      --formats 4x64,4x128 --csv "$R/${build}_$round.csv" >"$R/${build}_$round.log" 2>&1
    stamp "harness $build round $round" $?
  done
  pack
done
grep -E '^4x' "$R/new_1.log" | cut -c1-110
pack
if [ -n "${BASE_HONE:-}" ]; then
  mkdir -p "$R/empty_cache"
  for build in base new; do
    h=$BUILD/tools/hone/hone
    [ "$build" = base ] && h=$BASE_HONE
    HONE_CACHE_DIR=$R/empty_cache timeout "$(cap 100)" "$h" step --model models/llama-3.1-8b.json \
      --batch "${STEP_BATCH:-16}" --context 4k --quant int4:g64 --samples 9 --check-replays 200 \
      --no-breakdown --json "$R/step_$build.json" >"$R/step_$build.log" 2>&1
    stamp "step $build" $?
    sed -n '/| variant/,/^$/p' "$R/step_$build.log"
  done
  pack
fi

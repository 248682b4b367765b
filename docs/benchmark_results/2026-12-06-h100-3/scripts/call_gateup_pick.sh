#!/usr/bin/env bash
# One call (~3 min, an H100: the caches' keys name it): why the int4 g64 step with the lean
# loop's tolerance picks (docs/benchmark_results/2026-12-06-h100-3/call4) ran 1.6 % slower than
# its default step, where the tune had put the gate_up pick (ahead=4, warps_k=4) at 0.978x its
# default.
#   1. `hone step` with call4's cache (every pick) and with the same cache less its gate_up
#      entry (call5/cache_no_gateup), in turn, twice, each with the separate SiLU launch beside
#      the fused default;
#   2. `hone bench` of the gate_up default and pick (the tuner's cold measurement);
#   3. the qmv harness on gate_up at rows 1 with the group parameters cold as well
#      (--cold-params; the harness shares them across copies by default), this build and the
#      build before (`ab/base_qmv_affine_harness`), twice, on the four shapes at rows 1, 4, 8.
# Everything lands in OUT/gateup_pick.tar.gz.
#
#   scripts/device/call_gateup_pick.sh OUT
set -u
source "$(dirname "$0")/env.sh"
[ -x ab/prev_hone ] || { tar xJf .carry/ab.tar.xz && chmod +x ab/*; }
run_begin gateup_pick "${BUDGET:-420}" "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
MODEL=models/llama-3.1-8b.json
RES=docs/benchmark_results/2026-12-06-h100-3
for round in 1 2; do
  for which in all no_gateup; do
    cache=$R/cache_$which
    mkdir -p "$cache"
    src=$RES/call4/cache_int4_g64/tuning-cache.json
    [ $which = no_gateup ] && src=$RES/call5/cache_no_gateup/tuning-cache.json
    cp "$src" "$cache/"
    tag=step_${which}_$round
    HONE_CACHE_DIR=$cache timeout "$(cap 50)" "$H" step --model "$MODEL" --batch 1 \
      --context 4k --quant int4:g64 --separate-silu-mul --samples 9 --json "$R/$tag.json" \
      >"$R/$tag.log" 2>&1
    stamp "$tag" $?
    grep -E '^\| (default|tuned)' "$R/$tag.log" | sed "s/^/$tag /" | cut -c1-100
  done
done
pack
SHAPE=rows=1,n=28672,k=4096,bits=4,group=64
PICK=qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=4,outputs_per_warp=16,split_k=1,ahead=4
mkdir -p "$R/empty"
HONE_CACHE_DIR=$R/empty timeout "$(cap 40)" "$H" bench --op qmv.affine --shape "$SHAPE" \
  --tactic "$PICK" --cold --max-time 4 --numerics tolerance --json "$R/bench_gateup.json" \
  >"$R/bench_gateup.log" 2>&1
stamp "bench gate_up default and pick" $?
cat "$R/bench_gateup.log" | tail -n 8
pack
for round in 1 2; do
  for which in base lean; do
    bin=$BUILD/bench/qmv_affine_harness
    [ $which = base ] && bin=ab/base_qmv_affine_harness
    HONE_TEST_PATHS=mma timeout "$(cap 90)" "$bin" --no-check --cold-params \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8 --formats 4x64 \
      --csv "$R/table_${which}_$round.csv" >"$R/table_${which}_$round.log" 2>&1
    stamp "table --cold-params $which round $round" $?
  done
done
pack

#!/usr/bin/env bash
# The decode step with linears tuned in tolerance mode (never measured so far). The model tunes
# of every earlier step run were batch-invariant: gemv.bf16 could pick only configs of the mma
# default's K order, while its fma configs (0.977 of the loads-only ceiling on 28672 x 4096 at
# one row in docs/benchmark_results/2026-12-02-h200-2, against ~0.91 for the mma path) and the
# cuBLASLt candidates are admitted only by a tolerance tune; qmv.affine's grouped and stream
# configs likewise. A runtime that does not need a row's bits to be independent of the batch
# asks for that tune (`hone tune --model ... --numerics tolerance`); this measures what it buys.
#
# First an A/B of gemv.bf16's new register pipeline (docs/notes/gemv_bf16.md, v9), then the
# PyTorch peer of the step (bench/peers/decode_step_torch.py, bf16). Then per weight
# format (bf16; int4 g64): the model's linears at one row tuned in tolerance mode into
# a cache of their own (lm_head included), decode.paged and the small ops in their own numerics
# into the same cache, then `hone step` over that cache: default, default+pdl,
# tuned and tuned+pdl interleaved in one run, with the KV prefetch (256 KiB), the separate rope
# and append, and the separate SiLU launch (the step's default fuses it into the gate/up
# linear's epilogue) as variants of their own
# (scripts/device/chain_fusions.sh; docs/notes/decode_step.md), every PDL variant checked
# bit for bit against the PDL-off step of the same tactics over 1000 replays. The
# batch-invariant step of the same stop (scripts/device/chain_fusions.sh) is the comparison; its
# tuned column uses the batch-invariant cache. Everything lands in OUTDIR/step_tolerance.tar.gz,
# packed after each step. About 9 minutes.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/step_tolerance.sh "$OUT" build
set -u
source "$(dirname "$0")/env.sh"
run_begin step_tolerance 575 "${1:?OUTDIR}" "${2:-build}"
H="$BUILD/tools/hone/hone"
MODEL=models/llama-3.1-8b.json

# The gemv.bf16 register pipeline with 32-bit offsets and no fragment copies (same bits, 32-47 %
# fewer instructions per HMMA): the mma configs at rows 1 and 8 on the two large shapes of the
# step, timed by the harness built just before it (.carry/prev_gemv_bf16_harness.xz) and by
# this one, in turn, twice. About a minute.
# The kernel test of every config first (reference and bitwise order checks).
HONE_DEVICE_TEST_REDUCED=1 timeout 60 "$BUILD/tests/device/gemv_bf16_kernel_test" \
  --gtest_filter='GemvBf16KernelTest.*' >"$R/test_gemv_kernel.log" 2>&1
stamp "gemv_bf16_kernel_test" $?
grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_gemv_kernel.log" | head -5
if [ -f .carry/prev_gemv_bf16_harness.xz ]; then
  xz -dc .carry/prev_gemv_bf16_harness.xz >"$R/prev_gemv" && chmod +x "$R/prev_gemv"
  for round in 1 2; do
    for which in before after; do
      bin=$BUILD/bench/gemv_bf16_harness
      [ $which = before ] && bin=$R/prev_gemv
      HONE_TEST_PATHS=mma timeout 40 "$bin" --no-check --shapes 28672x4096,4096x14336 --rows 1,8 \
        >"$R/gemv_ab_${which}_$round.log" 2>&1
      stamp "gemv.bf16 pipeline A/B: $which, round $round" $?
      grep -E '^[0-9]+x[0-9]+ +[0-9]+ ' "$R/gemv_ab_${which}_$round.log" | sed "s/^/$which /" |
        cut -c1-120
    done
  done
  rm -f "$R/prev_gemv"
  pack
fi

# The PyTorch peer of the same step first (bf16, batch 1, context 4k), so that both of hone's
# steps below compare with it within this call (issue 14: bf16 >= 1.15x it, int4 g64 >= 2.5x).
timeout "$(cap 90)" python3 bench/peers/decode_step_torch.py --model "$MODEL" --batch 1 \
  --context 4k --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
stamp "peer (PyTorch, bf16)" $?
tail -n 3 "$R/peer.log"
pack

# name, op, quant, tune budget [s], then the tune's weight-format options. gemv.bf16 has the
# most candidates in tolerance mode (its own kernels and cuBLASLt's algorithms).
for spec in "bf16 gemv.bf16 bf16 170" \
  "int4_g64 qmv.affine,qmv.affine.silu_mul int4:g64 160 --bits 4 --group 64"; do
  read -r name op quant budget format <<<"$spec"
  [ "$(left)" -lt 60 ] && break
  cache="$R/cache_$name"
  mkdir -p "$cache"
  # The step quantises the lm_head like every other linear, so the int4 tune has five qmv
  # buckets, the lm_head (128256 x 4096) the costliest: its gate downloads and checks 263 MB of
  # fresh weights per candidate. At 100 s the tune was stopped inside it on the H100
  # (docs/benchmark_results/2026-12-05-h100-4: four buckets in 40 s, the fifth past 80 s).
  # The int4 cache starts from the bf16 one, for the picks of decode.paged and the small ops.
  [ "$name" = int4_g64 ] && [ -f "$R/cache_bf16/tuning-cache.json" ] &&
    cp "$R/cache_bf16/tuning-cache.json" "$cache/"
  HONE_CACHE_DIR=$cache timeout "$(cap $((budget + 30)))" "$H" tune --model "$MODEL" --rows 1 --ops "$op" \
    $format --include-lm-head --numerics tolerance --budget "${budget}s" \
    --json "$R/tune_$name.json" >"$R/tune_$name.log" 2>&1
  stamp "tune $name (tolerance)" $?
  grep -E 'pick|->' "$R/tune_$name.log" | tail -n 8
  pack
  # The step's other ops in their own numerics, once (the int4 step reads them from its copy):
  # decode.paged, whose default split read its 16.8 MB at 0.47 of the bandwidth in the H100
  # step's breakdown (369.6 us of 32 launches), and the small ops at one row. A budget of 80 s
  # over decode.paged's batch x context buckets and the small ops' rows-1 buckets.
  if [ "$name" = bf16 ] && [ "$(left)" -gt 200 ]; then
    HONE_CACHE_DIR=$cache timeout "$(cap 100)" "$H" tune --model "$MODEL" --rows 1 \
      --ops decode.paged,rmsnorm,rope,silu_mul --budget 80s --json "$R/tune_other_ops.json" \
      >"$R/tune_other_ops.log" 2>&1
    stamp "tune decode.paged and the small ops" $?
    pack
  fi
  [ "$(left)" -lt 40 ] && break
  run_step() {
    HONE_CACHE_DIR=$cache timeout "$(cap 110)" "$H" step --model "$MODEL" --batch 1 \
      --context 4k --quant "$quant" --kv-prefetch 256 --separate-rope-append --samples 9 \
      --json "$R/step_$name.json" "$@" >"$R/step_$name.log" 2>&1
  }
  # The step fuses SiLU x up into the gate/up linear by default; the separate launch beside it.
  run_step --separate-silu-mul
  stamp "step $name (tolerance picks, with the separate SiLU variant)" $?
  sed -n '/| variant/,/^$/p' "$R/step_$name.log"
  pack
done

#!/usr/bin/env bash
# One CLI test case: runs the built `hone` with a fresh temporary HONE_CACHE_DIR and checks
# the exit code and output by pattern.
#
#   tests/cli/cli_test.sh CASE PATH/TO/hone
set -uo pipefail
case_name=$1
HONE=$2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hone-cli-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HONE_CACHE_DIR=$tmp/cache
unset HONE_CACHE HONE_AUTOTUNE
cache_file=$HONE_CACHE_DIR/tuning-cache.json
failures=0

# run ARGS...: runs hone; stdout in $tmp/out, stderr in $tmp/err, exit code in $rc.
run() {
  "$HONE" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  echo "\$ hone $*  (exit $rc)"
}
fail() {
  echo "FAIL: $*"
  echo "--- stdout"; cat "$tmp/out"
  echo "--- stderr"; cat "$tmp/err"
  failures=$((failures + 1))
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1"; }
expect_out() { grep -Eq -- "$1" "$tmp/out" || fail "stdout does not match /$1/"; }
expect_err() { grep -Eq -- "$1" "$tmp/err" || fail "stderr does not match /$1/"; }
expect_file() { [ -f "$1" ] || fail "$1 was not written"; }
expect_no_file() { [ ! -e "$1" ] || fail "$1 exists but should not"; }

# A tiny model: qkv (128, 64), o_proj (64, 64), gate_up (256, 64), down (64, 128),
# lm_head (512, 64).
tiny_model() {
  cat >"$tmp/tiny.json" <<'JSON'
{"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
 "num_key_value_heads": 2, "vocab_size": 512, "tie_word_embeddings": true}
JSON
}

case $case_name in
help)
  run --help
  expect_rc 0
  expect_out "tune"
  expect_out "bench"
  expect_out "cache"
  expect_out "device"
  run
  expect_rc 2
  ;;
unknown_op)
  run --backend cpu tune --op gemv.nosuch --shape rows=1,n=64,k=64
  expect_rc 2
  expect_err "unknown op 'gemv.nosuch'"
  expect_err "gemv.f32"
  expect_no_file "$cache_file"
  ;;
bad_shape_token)
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=abc,k=64
  expect_rc 2
  expect_err "'n=abc'"
  run --backend cpu tune --op gemv.f32 --shape rows=2,n64,k=64
  expect_rc 2
  expect_err "'n64'"
  run --backend cpu bench --op gemv.f32 --shape rows=0,n=64,k=64
  expect_rc 2
  expect_err "'rows=0'"
  ;;
unknown_shape_dim)
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64,depth=3
  expect_rc 2
  expect_err "unknown dimension 'depth'"
  ;;
missing_shape_dim)
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64
  expect_rc 2
  expect_err "missing dimension 'k'"
  ;;
k_not_multiple_of_group)
  run --backend cpu tune --op qmv.affine --shape rows=1,n=64,k=100,bits=4,group=64
  expect_rc 2
  expect_err "k=100"
  expect_no_file "$cache_file"
  ;;
unknown_backend)
  run --backend tpu device
  expect_rc 2
  expect_err "tpu"
  ;;
missing_model_file)
  run --backend cpu tune --model "$tmp/no-such-model.json"
  expect_rc 2
  expect_err "no-such-model.json"
  ;;
malformed_model_json)
  printf '{"hidden_size": 64,, }' >"$tmp/broken.json"
  run --backend cpu tune --model "$tmp/broken.json"
  expect_rc 2
  expect_err "broken.json"
  expect_err "not valid JSON"
  ;;
model_missing_field)
  printf '{"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 256}' >"$tmp/partial.json"
  run --backend cpu tune --model "$tmp/partial.json"
  expect_rc 2
  expect_err "partial.json"
  expect_err "intermediate_size"
  ;;
bad_rows)
  tiny_model
  run --backend cpu tune --model "$tmp/tiny.json" --rows 4-2
  expect_rc 2
  expect_err "'4-2'"
  ;;
unknown_peer)
  run --backend cpu bench --op gemv.f32 --shape rows=1,n=64,k=64 --peer nosuchlib
  expect_rc 2
  expect_err "unknown peer 'nosuchlib'"
  ;;
device_prints_model)
  run device --working-set 8M
  expect_rc 0
  expect_out "^backend +(cpu|cuda)"
  expect_out "^device +[^ ]"
  expect_out "^llc +.*(measured|fallback)"
  expect_out "^rotation +[0-9]+ cop"
  run --backend cpu device --working-set lots
  expect_rc 2
  expect_err "'lots'"
  ;;
cache_verify_empty_is_clean)
  run cache verify
  expect_rc 0
  expect_out "^clean"
  expect_no_file "$cache_file"
  ;;
cache_verify_stale_fails)
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64
  expect_rc 0
  expect_file "$cache_file"
  sed -i -E 's/"hone_version": *"[^"]*"/"hone_version": "0.0.0-old"/' "$cache_file"
  run cache verify
  expect_rc 1
  expect_out "^stale .*gemv\.f32.*hone_version 0\.0\.0-old"
  ;;
cache_verify_corrupt_fails)
  mkdir -p "$HONE_CACHE_DIR"
  printf '{ this is not json' >"$cache_file"
  run cache verify
  expect_rc 1
  expect_out "^corrupt"
  ;;
tune_then_cached)
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64
  expect_rc 0
  expect_out "rows=2,n=64,k=64"
  expect_out " tuned$"
  expect_out "^tuned 1, cached 0, in [0-9.]+ s"
  expect_file "$cache_file"
  cp "$cache_file" "$tmp/after-first"
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64
  expect_rc 0
  expect_out " cached$"
  expect_out "^tuned 0, cached 1, in [0-9.]+ s"
  # Nothing measured, nothing written: the file is unchanged.
  cmp -s "$cache_file" "$tmp/after-first" || fail "the second run rewrote the cache"
  run cache verify
  expect_rc 0
  expect_out "^clean: 1 entry"
  ;;
tune_json_report)
  run --backend cpu tune --op gemv.f32 --shape rows=1,n=64,k=64 --json "$tmp/report.json"
  expect_rc 0
  expect_file "$tmp/report.json"
  grep -Eq '"source": "tuned"' "$tmp/report.json" || fail "report lacks source"
  grep -Eq '"candidates": \[' "$tmp/report.json" || fail "report lacks candidates"
  grep -Eq '"status": "ok"' "$tmp/report.json" || fail "report lacks candidate status"
  grep -Eq '"median_s": [0-9]' "$tmp/report.json" || fail "report lacks medians"
  ;;
tune_model_small)
  tiny_model
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1-2 --ops gemv.f32 --include-lm-head
  expect_rc 0
  expect_err "model tiny"
  expect_out "^gemv\.f32 +rows=1,n=128,k=64 +qkv"
  expect_out "rows=2,n=512,k=64 +lm_head"
  expect_out "rows=1,n=64,k=64 +o_proj"
  expect_out "^tuned 10, cached 0"
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1-2 --ops gemv.f32
  expect_rc 0
  expect_out "^tuned 0, cached 8"
  ;;
tune_bad_input_writes_nothing)
  tiny_model
  # gemv.f32 shapes are fine; qmv.affine with group 128 rejects k=64: nothing is measured.
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1 --ops gemv.f32,qmv.affine --group 128
  expect_rc 2
  expect_err "k=64"
  expect_no_file "$cache_file"
  ;;
tune_cache_off)
  HONE_CACHE=off run --backend cpu tune --op gemv.f32 --shape rows=1,n=64,k=64
  expect_rc 0
  expect_out "^tuned 1, cached 0"
  expect_out "HONE_CACHE=off"
  expect_no_file "$cache_file"
  ;;
bench_reports_measurement)
  run --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5 \
    --json "$tmp/bench.json"
  expect_rc 0
  expect_out "^mode +cold: [0-9]+ rotation cop"
  expect_out "^batch +[0-9]+ launch(es)? per sample"
  expect_out "^default +[^ ].* ok +[0-9.]+ [nmu]?s +[0-9.]+% +1\.000x"
  expect_file "$tmp/bench.json"
  run --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5 --warm \
    --tactic gemv.f32:nonsense=1
  expect_rc 0
  expect_out "^mode +warm: 1 rotation copy"
  expect_out "^tactic +.*cannot_implement"
  run --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64 --warm --cold
  expect_rc 2
  ;;
cache_show_and_clear)
  run --backend cpu tune --op gemv.f32 --shape rows=3,n=64,k=64
  expect_rc 0
  run cache path
  expect_rc 0
  expect_out "^$cache_file\$"
  run cache show
  expect_rc 0
  expect_out "1 entry"
  expect_out "^gemv\.f32@[0-9]+ +rows=3,n=64,k=64 +f32 .* fresh"
  run cache show --json
  expect_rc 0
  expect_out '"schema"'
  run cache clear
  expect_rc 0
  expect_no_file "$cache_file"
  ;;
*)
  echo "unknown test case '$case_name'"
  exit 2
  ;;
esac

[ "$failures" -eq 0 ] && echo "PASS $case_name" && exit 0
echo "FAILED $case_name ($failures checks)"
exit 1

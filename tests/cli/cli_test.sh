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
# rejects PATTERN ARGS...: hone ARGS exits 2 (bad usage or input) with PATTERN on stderr.
rejects() {
  local pattern=$1
  shift
  run "$@"
  expect_rc 2
  expect_err "$pattern"
}
expect_file() { [ -f "$1" ] || fail "$1 was not written"; }
expect_no_file() { [ ! -e "$1" ] || fail "$1 exists but should not"; }
# cache_entries: the number of entries in the cache file.
cache_entries() {
  local n
  n=$(grep -c '"key":' "$cache_file" 2>/dev/null)
  echo "${n:-0}"
}
# set_cached_tactic TACTIC: replaces the tactic of every cache entry.
set_cached_tactic() {
  local escaped
  escaped=$(printf '%s' "$1" | sed 's/[&|\\]/\\&/g')
  sed -i -E "s|\"tactic\": *\"[^\"]*\"|\"tactic\": \"$escaped\"|" "$cache_file"
}

# check_affine ARGS...: the quantize/dequantize helper (tests/cli/affine_check.py).
check_affine() {
  "${HONE_TEST_PYTHON:-python3}" "$(dirname "$0")/affine_check.py" "$@" >"$tmp/check" 2>&1 ||
    fail "affine_check.py $*: $(cat "$tmp/check")"
}
# expect_nothing_written: no output and no temporary file left in $tmp/work.
expect_nothing_written() {
  leftovers=$(find "$tmp/work" -mindepth 1 ! -name 'w*.bin' ! -name 'w*.npy' ! -name 'bad*.npy' \
    ! -path "$tmp/work/keep*" -print)
  [ -z "$leftovers" ] || fail "left behind: $leftovers"
}

# A duration as progress and estimates print it: 4.2s, 42s, 3m20s, 1h05m.
duration='([0-9]+h[0-9]{2}m|[0-9]+m[0-9]{2}s|[0-9]+(\.[0-9])?s)'

# A tiny model: qkv (128, 64), o_proj (64, 64), gate_up (256, 64), down (64, 128),
# lm_head (512, 64).
tiny_model() {
  cat >"$tmp/tiny.json" <<'JSON'
{"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
 "num_key_value_heads": 2, "vocab_size": 512, "tie_word_embeddings": true}
JSON
}

case $case_name in
unknown_subcommand)
  rejects "unknown subcommand 'nosuch' \(expected one of: device, tune, bench, cache" nosuch
  rejects "unknown subcommand 'nosuch' \(expected" --backend cpu nosuch --op x
  rejects "unknown subcommand 'nosuch' of 'cache' \(expected one of: path, show, verify, clear\)" cache nosuch
  rejects "A subcommand is required"
  ;;
model_is_a_directory)
  mkdir -p "$tmp/model_dir"
  rejects "model_dir: is a directory" --backend cpu tune --model "$tmp/model_dir"
  ;;
help)
  run --help
  expect_rc 0
  expect_out "tune"
  expect_out "bench"
  expect_out "cache"
  expect_out "device"
  expect_out "quantize"
  expect_out "dequantize"
  run quantize --help
  expect_rc 0
  expect_out "q.bin +uint32 \[n, k \* bits / 32\]"
  expect_out "affine.json"
  run
  expect_rc 2
  ;;
unknown_op)
  rejects "unknown op 'gemv.nosuch'" --backend cpu tune --op gemv.nosuch --shape rows=1,n=64,k=64
  expect_err "gemv.f32"
  expect_no_file "$cache_file"
  ;;
bad_shape_token)
  rejects "'n=abc'" --backend cpu tune --op gemv.f32 --shape rows=2,n=abc,k=64
  rejects "'n64'" --backend cpu tune --op gemv.f32 --shape rows=2,n64,k=64
  rejects "'rows=0'" --backend cpu bench --op gemv.f32 --shape rows=0,n=64,k=64
  ;;
unknown_shape_dim)
  rejects "unknown dimension 'depth'" --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64,depth=3
  ;;
missing_shape_dim)
  rejects "missing dimension 'k'" --backend cpu tune --op gemv.f32 --shape rows=2,n=64
  ;;
k_not_multiple_of_group)
  rejects "k=100" --backend cpu tune --op qmv.affine --shape rows=1,n=64,k=100,bits=4,group=64
  expect_no_file "$cache_file"
  ;;
unknown_backend)
  rejects "tpu" --backend tpu device
  ;;
missing_model_file)
  rejects "no-such-model.json" --backend cpu tune --model "$tmp/no-such-model.json"
  ;;
malformed_model_json)
  printf '{"hidden_size": 64,, }' >"$tmp/broken.json"
  rejects "broken.json" --backend cpu tune --model "$tmp/broken.json"
  expect_err "not valid JSON"
  ;;
model_missing_field)
  printf '{"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 256}' >"$tmp/partial.json"
  rejects "partial.json" --backend cpu tune --model "$tmp/partial.json"
  expect_err "intermediate_size"
  ;;
bad_rows)
  tiny_model
  rejects "'4-2'" --backend cpu tune --model "$tmp/tiny.json" --rows 4-2
  ;;
unknown_peer)
  rejects "unknown peer 'nosuchlib'" --backend cpu bench --op gemv.f32 --shape rows=1,n=64,k=64 --peer nosuchlib
  ;;
device_prints_model)
  run device --working-set 8M
  expect_rc 0
  expect_out "^backend +(cpu|cuda)"
  expect_out "^device +[^ ]"
  expect_out "^llc +.*(measured|fallback)"
  expect_out "^rotation +[0-9]+ cop"
  rejects "'lots'" --backend cpu device --working-set lots
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
cache_verify_unrunnable_fails_and_is_retuned)
  # A tactic that parses but that no config has, one this build's tuner never offers, and
  # garbage: each is reported by verify, ignored by bench and re-tuned by tune.
  for tactic in "gemv.f32:rows_per_block=3,cols_per_block=4,k_unroll=8,threads=1" \
    "gemv.f32:rows_per_block=2,cols_per_block=4,k_unroll=8,threads=4095" "%% not a tactic"; do
    run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
    expect_rc 0
    set_cached_tactic "$tactic"
    grep -qF "$tactic" "$cache_file" || fail "the test did not plant '$tactic'"
    run cache verify
    expect_rc 1
    expect_out "^unrunnable +gemv\.f32@[0-9]+\|rows=2,n=64,k=64\|f32\|"
    expect_out "^1 problem in "
    run cache show
    expect_rc 0
    expect_out "unrunnable: "
    run --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
    expect_rc 0
    expect_err "cache entry .*gemv\.f32.* this build cannot run; ignoring it"
    grep -Eq "^cached" "$tmp/out" && fail "bench timed the unrunnable cached tactic"
    run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
    expect_rc 0
    expect_err "re-tuning gemv\.f32 rows=2,n=64,k=64: its cache entry has a tactic this build cannot run"
    expect_out "^tuned 1, cached 0"
    run cache verify
    expect_rc 0
    expect_out "^clean: 1 entry checked"
  done
  ;;
cache_verify_skips_other_device)
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
  expect_rc 0
  sed -i -E 's/("key": *"gemv\.f32@[0-9]+\|[^|]*\|f32\|)[^"]*"/\1Some Other CPU"/' "$cache_file"
  grep -q "Some Other CPU" "$cache_file" || fail "the test did not change the device"
  run cache verify
  expect_rc 0
  expect_out "^skipped +gemv\.f32.*measured on Some Other CPU"
  expect_out "^1 entry skipped: 1 of another device, 0 of a backend absent here"
  expect_out "^clean: 0 entries checked"
  ;;
cache_unreadable_is_an_error)
  # A cache file the user cannot read is an error naming it, and stays as it is; only a file
  # that was read and failed to parse is corrupt. Root reads everything: run as nobody then.
  as_user=()
  if [ "$(id -u)" -eq 0 ]; then
    command -v setpriv >/dev/null || { echo "SKIP: root without setpriv"; exit 0; }
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
  run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
  expect_rc 0
  chmod 755 "$tmp"
  chmod 777 "$HONE_CACHE_DIR" # a rename would succeed: only the rule keeps the file
  chmod 000 "$cache_file"
  chmod 666 "$cache_file.lock" # the lock can be taken: only the rule keeps the file
  cp --preserve=all "$cache_file" "$tmp/before"
  run_as() {
    "${as_user[@]}" "$HONE" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    echo "\$ hone $*  (exit $rc, as $(id -un 2>/dev/null)${as_user:+ -> nobody})"
  }
  run_as cache verify
  expect_rc 1
  expect_err "cannot open tuning cache $cache_file: Permission denied"
  run_as --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
  expect_rc 1
  expect_err "cannot open tuning cache $cache_file: Permission denied"
  run_as cache clear
  expect_rc 1
  expect_file "$cache_file"
  [ "$(stat -c %a "$cache_file")" = 0 ] || fail "the cache file's mode changed"
  cmp -s "$cache_file" "$tmp/before" || fail "the cache file changed"
  [ -z "$(find "$HONE_CACHE_DIR" -name '*.corrupt-*')" ] || fail "the unreadable file was moved aside"
  ;;
tune_too_large_for_memory)
  # 2^24 x 2^24 f32 weights: a shape inside the buckets that no machine can hold.
  rejects "gemv\.f32 rows=1,n=16777216,k=16777216 needs [0-9]+ bytes \([0-9.e+]+ GiB\) for one input copy and its outputs; the cpu device \(.*\) has [0-9]+ bytes .* available" \
    --backend cpu tune --op gemv.f32 --shape rows=1,n=16777216,k=16777216
  rejects "rows=1,n=16777216,k=16777216 needs [0-9]+ bytes" \
    --backend cpu bench --op gemv.f32 --shape rows=1,n=16777216,k=16777216
  cat >"$tmp/huge.json" <<'JSON'
{"hidden_size": 1048576, "intermediate_size": 128, "num_attention_heads": 4,
 "num_key_value_heads": 2, "vocab_size": 512}
JSON
  rejects "needs [0-9]+ bytes .* has [0-9]+ bytes" --backend cpu tune --model "$tmp/huge.json" --rows 1 --ops gemv.f32
  expect_no_file "$cache_file"
  ;;
tune_progress_lines)
  tiny_model
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1-2 --ops gemv.f32 --samples 5
  expect_rc 0
  # stderr is a file here, not a terminal: the matrix size first, then one line per bucket,
  # with the time left as a duration (4.2s, 42s, 3m20s).
  expect_err "^matrix: 8 buckets on cpu \(.*\); no chain cells"
  expect_err "^\[1/8\] tuning gemv\.f32 rows=1,n=128,k=64: [0-9.]+ [mun]?s; $duration elapsed, about $duration left$"
  expect_err "^\[8/8\] tuning gemv\.f32 .*: [0-9.]+ [mun]?s; $duration elapsed$"
  [ "$(grep -c '^\[[0-9]*/8\] tuning' "$tmp/err")" -eq 8 ] || fail "expected 8 progress lines"
  ;;
tune_saves_as_it_goes)
  # An interrupted tune keeps the buckets it finished: the cache is saved after each one.
  tiny_model
  "$HONE" --backend cpu tune --model "$tmp/tiny.json" --rows 1-16 --include-lm-head --ops gemv.f32 \
    --samples 5 >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 600); do
    [ "$(cache_entries)" -ge 1 ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  saved=$(cache_entries)
  echo "killed after $saved of 45 buckets were saved"
  [ "$saved" -ge 1 ] || fail "nothing was saved before the kill"
  [ "$saved" -lt 45 ] || fail "the tune finished before it was killed; the test proves nothing"
  run cache verify
  expect_rc 0
  expect_out "^clean: $saved entr"
  ;;
tune_unwritable_cache_keeps_results)
  # The cache directory cannot be created (its parent is a file): the run still prints its
  # table and writes --json, then fails naming the cache.
  printf 'x' >"$tmp/not_a_dir"
  HONE_CACHE_DIR=$tmp/not_a_dir/cache run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 \
    --samples 5 --json "$tmp/report.json"
  expect_rc 1
  expect_out "^gemv\.f32 +rows=2,n=64,k=64 .* tuned$"
  expect_out "^tuned 1, cached 0"
  expect_err "cannot create cache directory $tmp/not_a_dir/cache"
  expect_err "the tuning cache was not saved"
  expect_file "$tmp/report.json"
  grep -Eq '"source": "tuned"' "$tmp/report.json" || fail "the report lacks the tuned bucket"
  ;;
tune_json_checked_before_tuning)
  rejects "--json: cannot write '$tmp/no_such_dir/report.json'" \
    --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --json "$tmp/no_such_dir/report.json"
  expect_no_file "$cache_file" # nothing was tuned
  expect_no_file "$tmp/no_such_dir"
  rejects "--json: cannot write" --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64 \
    --json "$tmp/no_such_dir/bench.json"
  ;;
tactic_env_invalid_is_refused)
  for value in "gemv.f32:rows_per_block" "gemv.f32:rows_per_block=3,cols_per_block=4,k_unroll=8,threads=1"; do
    HONE_TACTIC_GEMV_F32=$value rejects "HONE_TACTIC_GEMV_F32" --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64
    HONE_TACTIC_GEMV_F32=$value rejects "HONE_TACTIC_GEMV_F32" --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64
  done
  expect_no_file "$cache_file"
  good="gemv.f32:rows_per_block=1,cols_per_block=8,k_unroll=4,threads=1"
  HONE_TACTIC_GEMV_F32=$good run --backend cpu bench --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
  expect_rc 0
  expect_out "^env +rows_per_block=1,cols_per_block=8,k_unroll=4,threads=1 +ok"
  HONE_TACTIC_GEMV_F32=$good run --backend cpu tune --op gemv.f32 --shape rows=2,n=64,k=64 --samples 5
  expect_rc 0
  expect_err "note: HONE_TACTIC_GEMV_F32 is set: dispatch of gemv.f32 runs it"
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
tune_model_matrix)
  # The matrix size and the time estimate come first, and --dry-run measures nothing. The
  # default rows (1-64 and 128..8192) give the cpu ops, whose rows stop at 32, 1..8, 16 and 32.
  tiny_model
  run --backend cpu tune --model "$tmp/tiny.json" --dry-run
  expect_rc 0
  expect_err "^model tiny: hidden 64, intermediate 128, heads 4/2 \(kv\), head_dim 16$"
  expect_err "^matrix: 80 buckets on cpu \(.*\): 40 gemv\.f32, 40 qmv\.affine; no chain cells \(the cpu backend has no decode step\)$"
  expect_err "^to run: 80 of 80 \(0 cached\); estimate: $duration with every candidate \([0-9]+\), within the budget 9m00s"
  expect_out "^dry run: 80 of 80 to run, nothing measured$"
  expect_no_file "$cache_file"
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1-2 --ops gemv.f32 --samples 5
  expect_rc 0
  # Rows a bucket takes twice (64, 128: past the ops' rows) and cached buckets are not run.
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1-3,64,128 --dry-run
  expect_rc 0
  expect_err "^matrix: 24 buckets on cpu \(.*\): 12 gemv\.f32, 12 qmv\.affine;"
  expect_err "^to run: 16 of 24 \(8 cached\)"
  ;;
tune_model_budget)
  # A budget too small for every candidate caps the buckets (2 candidates before anything is
  # measured), says so in the estimate, the progress lines and the summary, and records the cap
  # and the candidates it turned down in --json.
  tiny_model
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1-4 --ops gemv.f32 --samples 5 \
    --budget 1s --json "$tmp/report.json"
  expect_rc 0
  expect_err "budget 1\.0s: 16 buckets capped to 32 candidates, still $duration at 2 a bucket \(over the budget\)"
  expect_err "^\[1/16\] tuning gemv\.f32 rows=1,n=128,k=64 \(at most 2 candidates\): "
  expect_out "^tuned 16, cached 0, in [0-9.]+ s \($duration\); [0-9]+ buckets capped by the budget 1\.0s; preparing [0-9.]+ s, gates [0-9.]+ s, timing [0-9.]+ s$"
  grep -Eq '"gate_s": [0-9.e-]+' "$tmp/report.json" || fail "the report lacks the gates' time"
  grep -Eq '"candidate_cap": 2' "$tmp/report.json" || fail "the report lacks the cap"
  grep -Eq '"reason": "budget: 2 candidates' "$tmp/report.json" || fail "no candidate was cut"
  rejects "--budget: 'soon' is not a duration" --backend cpu tune --model "$tmp/tiny.json" --budget soon
  run --backend cpu tune --model "$tmp/tiny.json" --rows 1 --ops gemv.f32 --samples 5 --budget 0 \
    --force --json "$tmp/full.json"
  expect_rc 0
  expect_err "estimate: $duration with every candidate \([0-9]+\); no budget"
  ! grep -q '"candidate_cap"' "$tmp/full.json" || fail "a tune without a budget was capped"
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
  rejects "k=64" --backend cpu tune --model "$tmp/tiny.json" --rows 1 --ops gemv.f32,qmv.affine --group 128
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
quantize_round_trip_raw)
  mkdir -p "$tmp/work" && cd "$tmp/work" || exit 1
  check_affine make w.bin 24 384 7
  for bits_group in 4:32 4:64 4:128 8:32 8:64 8:128; do
    bits=${bits_group%:*} group=${bits_group#*:}
    rm -rf q && run quantize w.bin q --n 24 --k 384 --bits "$bits" --group "$group"
    expect_rc 0
    expect_out "^quantized w.bin \[24, 384\] float32 to bits=$bits, group=$group in q"
    expect_out "max \|w - dequantized\| [0-9.e-]+, at most 0?\.[0-9]+ of its group's bound"
    grep -Eq "\"bits\": $bits," q/affine.json || fail "affine.json lacks bits $bits"
    [ "$(stat -c %s q/q.bin)" -eq $((24 * 384 * bits / 8)) ] || fail "q.bin size"
    [ "$(stat -c %s q/scales.bin)" -eq $((24 * 384 / group * 2)) ] || fail "scales.bin size"
    run dequantize q d.bin
    expect_rc 0
    expect_out "^dequantized q \(bits=$bits, group=$group\) to d.bin: float32 \[24, 384\], raw"
    check_affine check w.bin q d.bin
  done
  ;;
quantize_round_trip_npy)
  mkdir -p "$tmp/work" && cd "$tmp/work" || exit 1
  check_affine make w1.npy 16 256 3 1
  check_affine make w2.npy 16 256 4 2
  run quantize w1.npy q1 --bits 4 --group 64
  expect_rc 0
  run quantize w2.npy q2/ --bits 8 --group 32 --n 16 --k 256
  expect_rc 0
  for i in 1 2; do
    run dequantize "q$i" "d$i.npy"
    expect_rc 0
    expect_out "float32 \[16, 256\], \.npy"
    head -c 6 "d$i.npy" | grep -q NUMPY || fail "d$i.npy has no .npy magic"
    check_affine check "w$i.npy" "q$i" "d$i.npy"
  done
  # A quantized directory is replaced in place; nothing temporary stays behind.
  run quantize w2.npy q1 --bits 8 --group 128
  expect_rc 0
  grep -Eq '"group": 128' q1/affine.json || fail "q1 was not replaced"
  run dequantize q1 d1.npy
  expect_rc 0
  check_affine check w2.npy q1 d1.npy
  [ -z "$(find . -name '.*tmp-*' -o -name '.*old-*')" ] || fail "temporary files left behind"
  ;;
quantize_bad_input_writes_nothing)
  mkdir -p "$tmp/work" "$tmp/work/keep_dir" && cd "$tmp/work" || exit 1
  check_affine make w.bin 8 96 5
  check_affine make w.npy 8 96 5
  rejects "--bits 3 is not 4 or 8" quantize w.npy q --bits 3 --group 32
  rejects "--group 48 is not 32, 64 or 128" quantize w.npy q --bits 4 --group 48
  rejects "k=96 of w.npy is not a multiple of --group 64" quantize w.npy q --bits 4 --group 64
  rejects "w.bin holds 3072 bytes of data, expected n \* k \* 4 = 4096 for n=8, k=128" quantize w.bin q --n 8 --k 128 --group 32
  rejects "needs --n and --k" quantize w.bin q --group 32
  rejects "--n 0 is below 1" quantize w.bin q --n 0 --k 96 --group 32
  rejects "--n 4 differs from the .npy shape \(8, 96\)" quantize w.npy q --n 4 --group 32
  rejects "nosuch.bin" quantize nosuch.bin q --n 8 --k 96 --group 32
  rejects "'keep_dir' exists and is not a quantized directory" quantize w.npy keep_dir --group 32
  rejects "'w.bin' exists" quantize w.npy w.bin --group 32
  rejects "'nosuch_dir' does not exist" quantize w.npy nosuch_dir/q --group 32
  expect_nothing_written
  [ "$(stat -c %s w.bin)" -eq 3072 ] || fail "w.bin was changed"
  ;;
quantize_bad_npy_writes_nothing)
  mkdir -p "$tmp/work" && cd "$tmp/work" || exit 1
  for kind_message in "magic:no .x93NUMPY magic" "version:version 9.0 is not 1.0, 2.0 or 3.0" \
    "dtype:dtype '<f8' is not little-endian float32" "fortran:fortran_order is True" \
    "rank:shape \(2, 4, 64\) is not 2-D" "extra_key:unknown key 'order'" \
    "syntax:malformed .npy header: expected '\('" "truncated_header:header claims" \
    "truncated_data:holds 2044 bytes of data, expected n \* k \* 4 = 2048"; do
    kind=${kind_message%%:*} message=${kind_message#*:}
    check_affine bad-npy "$kind" "bad_$kind.npy"
    rejects "bad_$kind.npy" quantize "bad_$kind.npy" q --group 32
    expect_err "$message"
  done
  expect_nothing_written
  ;;
dequantize_bad_input_writes_nothing)
  mkdir -p "$tmp/work" && cd "$tmp/work" || exit 1
  check_affine make w.bin 8 128 6
  run quantize w.bin keep --n 8 --k 128 --bits 4 --group 64
  expect_rc 0
  # fresh_copy: bad/ as a copy of the good directory keep/.
  fresh_copy() { rm -rf bad && cp -r keep bad; }
  fresh_copy && sed -i 's/"bits": 4/"bits": 3/' bad/affine.json
  rejects "bad/affine.json: bits=3 is not 4 or 8" dequantize bad out.bin
  fresh_copy && sed -i 's/"group": 64/"group": 48/' bad/affine.json
  rejects "group=48 is not 32, 64 or 128" dequantize bad out.bin
  fresh_copy && sed -i 's/"k": 128/"k": 96/' bad/affine.json
  rejects "k=96 is not a multiple of group=64" dequantize bad out.bin
  fresh_copy && sed -i 's/"format_version": 1/"format_version": 2/' bad/affine.json
  rejects "format_version 2 is not 1" dequantize bad out.npy
  fresh_copy && printf '{"format": "hone.affine", "n": 8,, }' >bad/affine.json
  rejects "bad/affine.json: not valid JSON" dequantize bad out.bin
  fresh_copy && sed -i '/"n": 8,/d' bad/affine.json
  rejects "field 'n' is missing" dequantize bad out.bin
  fresh_copy && head -c 100 keep/q.bin >bad/q.bin
  rejects "'bad/q.bin' is 100 bytes, expected n \* k \* bits / 8 = 512" dequantize bad out.bin
  fresh_copy && rm bad/biases.bin
  rejects "bad/biases.bin" dequantize bad out.bin
  rejects "'w.bin' is not a quantized directory" dequantize w.bin out.bin
  rejects "'keep' is a directory" dequantize keep keep
  rm -rf bad
  expect_nothing_written
  ;;
sweep_bad_ranges_refused)
  # Judged before the device or a file is touched: the same on every build and machine.
  model="$(cd "$(dirname "$0")/../.." && pwd)/models/llama-3.2-1b.json"
  cd "$tmp" || exit 1
  rejects "--batch: range '16-1' is reversed \(16 > 1\)" sweep --model "$model" --batch 16-1
  rejects "--batch: '0' is not a positive integer" sweep --model "$model" --batch 0
  rejects "--batch: 'four' is not a positive integer" sweep --model "$model" --batch four
  rejects "--batch: batch 64 is beyond the decode step's limit of 32" sweep --model "$model" --batch 1-64
  rejects "--batch: '2' is listed twice in '1,2,2'" sweep --model "$model" --batch 1,2,2
  rejects "--batch: range '20-30' holds no power of two" sweep --model "$model" --batch 20-30
  rejects "--context: range '32k-1k' is reversed \(32768 > 1024\)" sweep --model "$model" --context 32k-1k
  rejects "--context: '0' is not a positive token count" sweep --model "$model" --context 0-4k
  rejects "--context: '1.5k' is not a positive token count" sweep --model "$model" --context 1.5k
  printf '{"format": "hone.sweep", "results": []}' >not_peer.json
  rejects "--peer not_peer.json: field 'format' is \"hone.sweep\"" sweep --model "$model" --peer not_peer.json
  [ ! -e sweep ] || fail "a refused sweep created its output directory"
  ;;
*)
  echo "unknown test case '$case_name'"
  exit 2
  ;;
esac

[ "$failures" -eq 0 ] && echo "PASS $case_name" && exit 0
echo "FAILED $case_name ($failures checks)"
exit 1

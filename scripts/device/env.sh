# Sourced by the device scripts: moves to the repository root, puts nvcc on PATH, and libcublasLt
# where the image keeps it when the loader does not find it (the programs link it dynamically),
# for the build BUILD names (set before sourcing, or given to run_begin).
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
export PATH=$PATH:/usr/local/cuda/bin
find_cublaslt() {
  if [ -x "$BUILD/tools/hone/hone" ] && ldd "$BUILD/tools/hone/hone" | grep -q 'libcublasLt.*not found'; then
    local lib
    lib=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.*' -print -quit 2>/dev/null)
    [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}
if [ -n "${BUILD:-}" ]; then find_cublaslt; fi

# run_begin NAME SECONDS OUTDIR [BUILD] (BUILD default build): the step helpers of a device script
# whose output goes to OUTDIR/NAME and is packed into OUTDIR/NAME.tar.gz after each step (the
# device tool brings back only a few files; one archive per script keeps two scripts of one call
# apart).
#   left      seconds left of the script's budget (a device command may run 600)
#   cap N     N, or the seconds left where fewer
#   pack      (re)writes the archive
#   stamp S RC  logs step S's exit status and time to R/steps.log
#   device_tests T...  runs each device test T of BUILD on the reduced shapes (120 s cap each),
#                      stamps it and prints its verdict lines; the logs go to R/test_T.log
run_begin() {
  RUN_NAME=$1
  RUN_BUDGET=$2
  OUTDIR=$3
  export BUILD=${4:-build}
  find_cublaslt
  R=$OUTDIR/$RUN_NAME
  mkdir -p "$R"
  T0=$(date +%s)
  nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv \
    >"$R/gpu.txt" 2>&1
}
left() { echo $((RUN_BUDGET - ($(date +%s) - T0))); }
cap() { local l; l=$(left); echo $(($1 < l ? $1 : l)); }
pack() { (cd "$OUTDIR" && tar czf "$RUN_NAME.tar.gz" "$RUN_NAME"); }
stamp() { echo "$1 rc=$2 $(($(date +%s) - T0)) s" | tee -a "$R/steps.log"; }
device_tests() {
  local t
  for t in "$@"; do
    HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 120)" "$BUILD/tests/device/$t" >"$R/test_$t.log" 2>&1
    stamp "$t" $?
    grep -hE '^\[  (PASSED|FAILED) |Failure' "$R/test_$t.log" | head -6
  done
}

# filtered_test LABEL SECONDS TEST FILTER LINES: BUILD's device test TEST on the reduced shapes
# with --gtest_filter=FILTER (SECONDS cap) into R/test.log, stamped LABEL; prints its verdicts,
# failures and the lines matching the extended regex LINES (at most 40), and packs.
filtered_test() {
  HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap "$2")" "$BUILD/tests/device/$3" --gtest_filter="$4" \
    >"$R/test.log" 2>&1
  stamp "$1" $?
  grep -hE "^\[  (PASSED|FAILED) |Failure|$5" "$R/test.log" | head -40
  pack
}

# sanitize LABEL TEST FILTER: compute-sanitizer memcheck, then racecheck, of BUILD's device test
# TEST on the reduced shapes with --gtest_filter=FILTER (60 s cap each; the caller's environment,
# e.g. HONE_TEST_TACTIC_HAS, passes through), the verdict lines into R/sanitizer_TOOL.log.
sanitize() {
  local label=$1 test=$2 filter=$3 tool rc
  for tool in memcheck racecheck; do
    HONE_DEVICE_TEST_REDUCED=1 timeout "$(cap 60)" compute-sanitizer --tool $tool \
      --error-exitcode 3 "$BUILD/tests/device/$test" --gtest_filter="$filter" \
      >"$R/sanitizer_$tool.raw" 2>&1
    rc=$?
    echo "$tool $label: rc $rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|\[  (PASSED|FAILED) ' \
      "$R/sanitizer_$tool.raw" | tr '\n' ' ')" | tee "$R/sanitizer_$tool.log"
    grep -m 10 -E 'Invalid|Race|Failure' "$R/sanitizer_$tool.raw" >>"$R/sanitizer_$tool.log"
    rm -f "$R/sanitizer_$tool.raw"
    pack
  done
}

# time_step NAME MODEL QUANT [hone step options...]: `hone step` of MODEL at batch 1, context 4k,
# QUANT weights, 9 samples, with the tuning cache R/cache, into R/NAME.{log,json}; prints its
# table and chain lines and packs.
time_step() {
  local name=$1 model=$2 quant=$3
  shift 3
  HONE_CACHE_DIR=$R/cache timeout "$(cap 150)" "$BUILD/tools/hone/hone" step --model "$model" \
    --batch 1 --context 4k --quant "$quant" --samples 9 --json "$R/$name.json" "$@" \
    >"$R/$name.log" 2>&1
  stamp "step $name" $?
  sed -n '/| variant/,/^$/p' "$R/$name.log"
  grep -E '^chain (tactic|pick)' "$R/$name.log"
  pack
}

# peer_and_int4_tune MODEL CACHE TUNE_SECONDS: the PyTorch bf16 peer of MODEL's decode step
# (batch 1, context 4k) into R/peer.{json,md,log}, then MODEL's int4 g64 linears tuned at one
# row in tolerance numerics (the lm_head included) into CACHE, R/tune.{json,log}.
peer_and_int4_tune() {
  timeout "$(cap 60)" python3 bench/peers/decode_step_torch.py --model "$1" --batch 1 \
    --context 4k --json "$R/peer.json" --md "$R/peer.md" >"$R/peer.log" 2>&1
  stamp peer $?
  grep -E '^\| llama' "$R/peer.md"
  mkdir -p "$2"
  [ "$3" -gt 0 ] || return 0
  HONE_CACHE_DIR=$2 timeout "$(cap $(($3 + 30)))" "$BUILD/tools/hone/hone" tune --model "$1" \
    --rows 1 --ops qmv.affine,qmv.affine.silu_mul --bits 4 --group 64 --include-lm-head \
    --numerics tolerance --budget "$3s" --json "$R/tune.json" >"$R/tune.log" 2>&1
  stamp "tune int4 g64 linears (tolerance)" $?
  grep -E 'pick|->' "$R/tune.log" | tail -n 8
}

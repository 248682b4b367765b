#!/usr/bin/env bash
# Breaks each guarded behaviour once and checks that its test fails, then restores the source.
# Usage: scripts/mutation_check.sh [build-dir]   (the build dir must be configured already)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
failures=0
# Originals are kept outside the source tree, so that nothing else working in it (a build, a
# commit) sees a stray copy.
backup_dir=$(mktemp -d "${TMPDIR:-/tmp}/hone-mutation.XXXXXX")
trap 'rm -rf "$backup_dir"' EXIT

# mutate FILE OLD NEW TEST_BINARY GTEST_FILTER LABEL
mutate() {
  local file=$1 old=$2 new=$3 binary=$4 filter=$5 label=$6
  local original=$backup_dir/original
  cp -p "$file" "$original"
  python3 - "$file" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if old not in text:
    sys.exit("mutation anchor not found in " + path + ": " + old)
open(path, "w").write(text.replace(old, new, 1))
PY
  local ok=$?
  if [ $ok -eq 0 ] && cmake --build "$build" --target "$binary" >/dev/null 2>&1; then
    if "$build/tests/unit/$binary" --gtest_filter="$filter" >/dev/null 2>&1; then
      echo "NOT CAUGHT  $label ($binary $filter)"
      failures=$((failures + 1))
    else
      echo "caught      $label"
    fi
  else
    echo "BROKEN      $label (mutation did not apply or build)"
    failures=$((failures + 1))
  fi
  cp "$original" "$file"
  # The restored file keeps its old mtime, older than the mutated object: make the next build
  # recompile it, or the build dir keeps the mutation.
  touch "$file"
}

mutate src/core/tuner.cpp "  if (interleave) {" "  if (false) {" \
  tuner_test "Tuner.InterleavingCancelsLinearDrift" "sequential instead of interleaved timing"
mutate src/core/tuner.cpp \
  "r.margin = std::max(options_.min_margin, options_.noise_multiplier * r.noise_floor);" \
  "r.margin = 0;" tuner_test "Tuner.NoiseBelowTheMarginKeepsTheDefault" "no switch margin"
mutate src/core/tuner.cpp "    if (check.pass())" "    if (true)" \
  tuner_test "Tuner.GateFailingCandidateIsNeverPicked" "gate ignored"
mutate src/core/measurement.cpp "  if (options_.fixed_batch > 0)" \
  "  if (true) return 1; if (options_.fixed_batch > 0)" \
  measurement_test "Measurement.BatchCalibrationRecoversRatiosThatSyncSqueezes" \
  "no batch calibration"
mutate src/core/bucket.cpp "  if (value < lo || value > hi)" "  if (value < lo - 1 || value > hi + 1)" \
  bucket_test "Bucket.*" "bucket bounds"
mutate src/core/bucket.cpp "return static_cast<int64_t>(sq >= mid ? upper : lower);" \
  "return static_cast<int64_t>(upper);" bucket_test "Bucket.*" "pow2 rounding"
mutate src/core/dispatcher.cpp \
  "  if (std::optional<Tactic> t = op.env_override(*bucket, options_.settings)) {" \
  "  if (std::optional<Tactic> t = std::nullopt) {" dispatcher_test \
  "DispatcherTest.EnvOverrideIsUsedVerbatim" "env override ignored"
mutate src/core/dispatcher.cpp "    log_warn(std::string(op.name()) + \": shape \"" \
  "    for (int i = 0; i < 2; ++i) log_warn(std::string(op.name()) + \": shape \"" \
  dispatcher_test "DispatcherTest.OutOfBucketGetsTheDefaultWithExactlyOneWarning" \
  "out-of-bucket warning repeated"
mutate src/core/dispatcher.cpp "  if (options_.autotune) {" "  if (true) {" dispatcher_test \
  "DispatcherTest.NoAutotuneNoCacheRunsTheDefaultBitForBit" "tuning without HONE_AUTOTUNE"
mutate src/core/dispatcher.cpp "  if (found.usable()) {" "  if (found.entry) {" dispatcher_test \
  "DispatcherTest.CachedTacticTheOpCannotRunFallsBackWithAWarning" \
  "an unusable cached entry served"
mutate src/core/dispatcher.cpp "warned_keys_.insert(r.key).second" "true" dispatcher_test \
  "DispatcherTest.AnUnrunnableEntryIsWarnedAboutOncePerBucket" \
  "unrunnable entry warned about per shape"
mutate src/core/op.cpp "      return std::nullopt;
  return \"tactic '\" + tactic.str() + \"' is not one of" "      return std::nullopt;
  return std::nullopt; return \"tactic '\" + tactic.str() + \"' is not one of" tuning_store_test \
  "TuningStoreTest.AnEntryThisBuildCannotRunIsUnrunnableAndRetuned" \
  "cached tactic outside the candidates accepted"
mutate src/core/op.cpp "    compile(tactic);
  } catch" "    (void)tactic;
  } catch" tuning_store_test "TuningStoreTest.AnEntryThisBuildCannotRunIsUnrunnableAndRetuned" \
  "cached tactic not compiled"
mutate src/core/tuning_store.cpp "    p.save_error = e.what();" "    throw;" dispatcher_test \
  "DispatcherTest.LazyTuneWhoseSaveFailsServesThePick" "failed save loses the lazy tune"
mutate src/core/tune.cpp "  if (std::optional<std::string> shortfall = memory_shortfall(backend, op, shape))
    HONE_INVALID_ARGUMENT(*shortfall);" "" tuning_store_test \
  "TuningStoreTest.AShapeThatDoesNotFitIsRefusedBeforePreparing" "no memory check before prepare"
mutate src/core/op.cpp "  if (!owns_kernel(t.kernel)) {" "  if (false) {" dispatcher_test \
  '*SharedOverride*' "another backend's shared override applied"
mutate src/cpu/cpu_workload.cpp "  poison(y_);" "" cpu_workload_test \
  "CpuWorkload.OutputIsPoisonedBeforeEachCheck" "CPU gate without poisoned output"
mutate src/cpu/cpu_workload.cpp "    fill_copy(i, seed_ + 2 * i);" "    fill_copy(i, seed_);" \
  cpu_workload_test "CpuWorkload.RotationCopiesHoldDistinctInputs" "identical rotation copies"
mutate src/core/cache.cpp "    while (::flock(fd_, LOCK_EX) != 0) {" "    while (false) {" cache_test \
  "CacheTest.TwoProcessesSavingAtOnceLoseNothing" "save without the lock"
mutate src/core/cache.cpp "  if (::rename(path.c_str(), target.c_str()) != 0)" \
  "  if (::remove(path.c_str()) != 0)" cache_test "CacheTest.*Corrupt*:CacheTest.*Garbage*" \
  "corrupt file deleted instead of kept"
mutate src/core/cache.cpp "      state.error = \"cannot read tuning cache \"" \
  "      state.corrupt = true; state.reason = \"cannot read tuning cache \"" cache_test \
  "CacheTest.UnreadableFileIsAnErrorNamingItAndStaysAsItIs" "unreadable cache file treated as corrupt"
mutate src/cache_audit.cpp "entry_problem(e, *op, *bucket, current))" "std::optional<VerifyItem>())" \
  c_api_test "CApiTune.AnUnrunnableCachedTacticIsReportedAndRetuned" \
  "cache verify blind to unrunnable entries"
mutate src/core/key.cpp "    if (a != b)" "    if (false)" cache_test \
  "CacheTest.OtherHoneVersionIsStaleAndRetuneReplacesIt" "stale metadata accepted"

cmake --build "$build" >/dev/null 2>&1
echo "mutations not caught or broken: $failures"
exit $((failures > 0))

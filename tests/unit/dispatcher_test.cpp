#include "hone/dispatcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemv_f32.h"
#include "hone/error.h"
#include "hone/log.h"
#include "hone/ops/cpu.h"
#include "hone/registry.h"
#include "hone/cache.h"

namespace hone {
namespace {

namespace fs = std::filesystem;

// Sets environment variables for one test and restores them afterwards; gives each test an
// empty cache directory.
class DispatcherTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hone-dispatcher-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    set("HONE_CACHE_DIR", dir_.string());
    unset("HONE_AUTOTUNE");
    unset("HONE_CACHE");
    unset(tactic_env_name("gemv.f32").c_str());
    unset(tactic_env_name("qmv.affine"));
    unset(tactic_env_name("cpu", "qmv.affine"));
    set_log_sink([this](LogLevel, std::string_view m) { warnings_.emplace_back(m); });
  }
  void TearDown() override {
    set_log_sink({});
    for (auto &[name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
    fs::remove_all(dir_);
  }
  void remember(const std::string &name) {
    for (auto &s : saved_)
      if (s.first == name)
        return;
    const char *v = std::getenv(name.c_str());
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  void set(const std::string &name, const std::string &value) {
    remember(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string &name) {
    remember(name);
    ::unsetenv(name.c_str());
  }
  const TunableOp &gemv() {
    const TunableOp *op = Registry::global().find("gemv.f32", "cpu");
    EXPECT_NE(op, nullptr);
    return *op;
  }

  const TunableOp &qmv() {
    const TunableOp *op = Registry::global().find("qmv.affine", "cpu");
    EXPECT_NE(op, nullptr);
    return *op;
  }

  // Tunes gemv.f32 at `shape` lazily (warm) into the test's cache, then replaces the cached
  // pick by `tactic`, as a hand edit or another build would. Returns the options it tuned
  // with (HONE_AUTOTUNE on) and clears the warnings.
  DispatcherOptions tune_then_replace(const Shape &shape, const std::string &tactic) {
    set("HONE_AUTOTUNE", "1");
    DispatcherOptions opt = DispatcherOptions::from_env();
    opt.tune.measure.cold = false;
    {
      Dispatcher d(cpu::backend(), opt);
      EXPECT_EQ(d.resolve(gemv(), shape).source, Source::tuned);
    }
    Cache cache(dir_ / "tuning-cache.json");
    cache.load();
    EXPECT_EQ(cache.entries().size(), 1u);
    CacheEntry e = cache.entries().begin()->second;
    e.tactic = tactic;
    cache.put(e);
    cache.save();
    warnings_.clear();
    return opt;
  }

  fs::path dir_;
  std::vector<std::string> warnings_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(DispatcherTest, NoAutotuneNoCacheRunsTheDefaultBitForBit) {
  const int64_t rows = 5, n = 37, k = 300;
  std::vector<float> x(rows * k), w(n * k), y(rows * n, -1), y_default(rows * n, -2);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 7919 % 1000) / 1000.0 - 0.5);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 104729 % 997) / 997.0 - 0.5);

  const Shape shape{{rows, n, k}, DType::f32};
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  const Resolution &r = d.resolve(gemv(), shape);
  EXPECT_EQ(r.source, Source::default_tactic);
  EXPECT_EQ(r.tactic, gemv().default_tactic(*gemv().buckets().map(shape)));
  ops::cpu::gemv_f32(x.data(), w.data(), y.data(), rows, n, k, d);

  // The default tactic forced explicitly gives the same bits.
  set(tactic_env_name("gemv.f32"), r.tactic.str());
  Dispatcher forced(cpu::backend(), DispatcherOptions::from_env());
  EXPECT_EQ(forced.resolve(gemv(), shape).source, Source::env_override);
  ops::cpu::gemv_f32(x.data(), w.data(), y_default.data(), rows, n, k, forced);
  EXPECT_EQ(0, std::memcmp(y.data(), y_default.data(), y.size() * sizeof(float)));
  EXPECT_EQ(d.tunes(), 0u);
  EXPECT_FALSE(fs::exists(dir_ / "tuning-cache.json")); // nothing tuned, nothing written
}

TEST_F(DispatcherTest, EnvOverrideIsUsedVerbatim) {
  const Shape shape{{4, 64, 64}, DType::f32};
  std::vector<Tactic> cands = gemv().candidates(*gemv().buckets().map(shape));
  ASSERT_GE(cands.size(), 2u);
  const Tactic chosen = cands.back();
  ASSERT_NE(chosen, gemv().default_tactic(shape));
  set(tactic_env_name("gemv.f32"), chosen.str());
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  const Resolution &r = d.resolve(gemv(), shape);
  EXPECT_EQ(r.source, Source::env_override);
  EXPECT_EQ(r.tactic.str(), chosen.str());
}

TEST_F(DispatcherTest, MalformedEnvOverrideNamesTheVariable) {
  set(tactic_env_name("gemv.f32"), "gemv.f32:rows_per_block");
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  try {
    d.lookup(gemv(), Shape{{4, 64, 64}, DType::f32});
    FAIL() << "accepted a malformed override";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("HONE_TACTIC_GEMV_F32"), std::string::npos);
  }
}

// qmv.affine exists on both backends under one name: a shared HONE_TACTIC_QMV_AFFINE holding
// the other backend's tactic must not reach the CPU kernel.
TEST_F(DispatcherTest, SharedOverrideOfAnotherBackendIsIgnoredWithOneWarning) {
  const Shape shape{{4, 64, 128, 4, 64}, DType::f32};
  const std::string cuda_tactic = "qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,"
                                  "outputs_per_warp=16,split_k=1";
  set(tactic_env_name("qmv.affine"), cuda_tactic);
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  const Resolution &r = d.resolve(qmv(), shape);
  EXPECT_EQ(r.source, Source::default_tactic);
  EXPECT_EQ(r.tactic, qmv().default_tactic(*qmv().buckets().map(shape)));
  ASSERT_FALSE(warnings_.empty());
  EXPECT_NE(warnings_.back().find("HONE_TACTIC_QMV_AFFINE"), std::string::npos);
  EXPECT_NE(warnings_.back().find("qmv.affine.mma"), std::string::npos);
  // The same value is not warned about again, for this or another shape.
  const size_t warned = warnings_.size();
  Dispatcher again(cpu::backend(), DispatcherOptions::from_env());
  again.resolve(qmv(), Shape{{2, 64, 128, 4, 64}, DType::f32});
  EXPECT_EQ(warnings_.size(), warned);
}

TEST_F(DispatcherTest, BackendOverrideWinsOverTheSharedOne) {
  const Shape shape{{4, 64, 128, 4, 64}, DType::f32};
  std::vector<Tactic> cands = qmv().candidates(*qmv().buckets().map(shape));
  ASSERT_GE(cands.size(), 2u);
  set(tactic_env_name("qmv.affine"), cands.front().str());
  set(tactic_env_name("cpu", "qmv.affine"), cands.back().str());
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  const Resolution &r = d.resolve(qmv(), shape);
  EXPECT_EQ(r.source, Source::env_override);
  EXPECT_EQ(r.tactic.str(), cands.back().str());
}

TEST_F(DispatcherTest, BackendOverrideOfAnotherBackendNamesTheVariable) {
  set(tactic_env_name("cpu", "qmv.affine"),
      "qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=16,split_k=1");
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  try {
    d.lookup(qmv(), Shape{{4, 64, 128, 4, 64}, DType::f32});
    FAIL() << "accepted another backend's tactic";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("HONE_TACTIC_CPU_QMV_AFFINE"), std::string::npos);
  }
}

TEST_F(DispatcherTest, OutOfBucketGetsTheDefaultWithExactlyOneWarning) {
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  const Shape shape{{40, 64, 64}, DType::f32}; // rows above 32
  for (int i = 0; i < 5; ++i) {
    const Resolution &r = d.resolve(gemv(), shape);
    EXPECT_EQ(r.source, Source::out_of_bucket);
    EXPECT_EQ(r.tactic, gemv().default_tactic(shape));
  }
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("rows=40"), std::string::npos) << warnings_[0];
  // A second shape outside the buckets warns once more, for itself.
  d.resolve(gemv(), Shape{{48, 64, 64}, DType::f32});
  d.resolve(gemv(), Shape{{48, 64, 64}, DType::f32});
  EXPECT_EQ(warnings_.size(), 2u);
}

TEST_F(DispatcherTest, LazyTuneOnceThenServedFromTheCache) {
  set("HONE_AUTOTUNE", "1");
  DispatcherOptions opt = DispatcherOptions::from_env();
  ASSERT_TRUE(opt.autotune);
  opt.tune.measure.cold = false; // tiny problem; keep the test fast
  const Shape shape{{2, 32, 64}, DType::f32};
  {
    Dispatcher d(cpu::backend(), opt);
    const Resolution &r = d.resolve(gemv(), shape);
    EXPECT_EQ(r.source, Source::tuned);
    d.lookup(gemv(), shape);
    d.lookup(gemv(), Shape{{2, 32, 64}, DType::f32});
    EXPECT_EQ(d.tunes(), 1u);
    EXPECT_EQ(d.resolutions(), 1u);
  }
  ASSERT_TRUE(fs::exists(dir_ / "tuning-cache.json"));
  Dispatcher again(cpu::backend(), opt);
  EXPECT_EQ(again.resolve(gemv(), shape).source, Source::cache);
  EXPECT_EQ(again.tunes(), 0u);
}

// A cached tactic that parses but that the op cannot run (a hand-edited or foreign entry) is
// ignored with a warning, like a malformed one; the call goes on with the default.
TEST_F(DispatcherTest, CachedTacticTheOpCannotRunFallsBackWithAWarning) {
  const Shape shape{{2, 32, 64}, DType::f32};
  DispatcherOptions opt = tune_then_replace(shape, "gemv.f32:no_such_field=3");
  opt.autotune = false;
  Dispatcher d(cpu::backend(), opt);
  const Resolution &r = d.resolve(gemv(), shape);
  EXPECT_EQ(r.source, Source::default_tactic);
  EXPECT_EQ(r.tactic, gemv().default_tactic(*gemv().buckets().map(shape)));
  EXPECT_EQ(r.compiled.as<cpu::GemvConfig>().tactic(), r.tactic);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("cannot run"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("no_such_field"), std::string::npos) << warnings_[0];
}

// With HONE_AUTOTUNE, an entry this build cannot run is skipped for the next source, a lazy
// tune, which replaces it; one warning names the entry.
TEST_F(DispatcherTest, CachedTacticTheBuildCannotRunIsRetunedLazily) {
  const Shape shape{{2, 32, 64}, DType::f32};
  // A configuration this build never offers for the bucket: threads=4095 compiles on the CPU,
  // but no tune of this build could have picked it.
  const DispatcherOptions opt = tune_then_replace(
      shape, "gemv.f32:rows_per_block=2,cols_per_block=4,k_unroll=8,threads=4095");
  {
    Dispatcher d(cpu::backend(), opt);
    const Resolution &r = d.resolve(gemv(), shape);
    EXPECT_EQ(r.source, Source::tuned);
    EXPECT_EQ(d.tunes(), 1u);
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_NE(warnings_[0].find("cannot run"), std::string::npos) << warnings_[0];
    EXPECT_NE(warnings_[0].find("threads=4095"), std::string::npos) << warnings_[0];
  }
  Dispatcher again(cpu::backend(), opt);
  EXPECT_EQ(again.resolve(gemv(), shape).source, Source::cache); // replaced on disk
}

// Shapes of one bucket share its cache entry: an unrunnable one is warned about once.
TEST_F(DispatcherTest, AnUnrunnableEntryIsWarnedAboutOncePerBucket) {
  DispatcherOptions opt = tune_then_replace(Shape{{16, 32, 64}, DType::f32}, "%% not a tactic");
  opt.autotune = false;
  Dispatcher d(cpu::backend(), opt);
  for (int64_t rows : {16, 17, 18}) // all in the rows=16 bucket
    EXPECT_EQ(d.resolve(gemv(), Shape{{rows, 32, 64}, DType::f32}).source, Source::default_tactic);
  EXPECT_EQ(warnings_.size(), 1u);
}

// A lazy tune whose save fails has still tuned: the pick is served, and the warning says the
// save failed, not the tune.
TEST_F(DispatcherTest, LazyTuneWhoseSaveFailsServesThePick) {
  { std::ofstream(dir_ / "file") << "x"; } // a regular file where a directory is needed
  set("HONE_AUTOTUNE", "1");
  DispatcherOptions opt = DispatcherOptions::from_env();
  opt.tune.measure.cold = false;
  opt.cache_path = dir_ / "file" / "cache" / "tuning-cache.json";
  Dispatcher d(cpu::backend(), opt);
  const Resolution &r = d.resolve(gemv(), Shape{{2, 32, 64}, DType::f32});
  EXPECT_EQ(r.source, Source::tuned);
  EXPECT_EQ(d.tunes(), 1u);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("could not save"), std::string::npos) << warnings_[0];
  EXPECT_EQ(warnings_[0].find("failed"), std::string::npos) << warnings_[0];
}

// A cache file that cannot be read does not stop dispatch: one warning names it, and ops run
// uncached.
TEST_F(DispatcherTest, AnUnreadableCacheFileIsWarnedAboutAndDispatchGoesOn) {
  fs::create_directories(dir_ / "tuning-cache.json"); // read() refuses a directory
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find((dir_ / "tuning-cache.json").string()), std::string::npos)
      << warnings_[0];
  EXPECT_EQ(d.resolve(gemv(), Shape{{2, 32, 64}, DType::f32}).source, Source::default_tactic);
  EXPECT_TRUE(fs::is_directory(dir_ / "tuning-cache.json"));
}

// Options the caller builds are the API argument: the environment's overrides apply only
// through Settings (from_settings / from_env), never behind the caller's back.
TEST_F(DispatcherTest, OptionsBuiltByTheCallerIgnoreTheEnvironment) {
  const Shape shape{{4, 64, 64}, DType::f32};
  const Tactic other = gemv().candidates(*gemv().buckets().map(shape)).back();
  set(tactic_env_name("gemv.f32"), other.str());
  DispatcherOptions opt;
  opt.use_cache = false;
  Dispatcher d(cpu::backend(), opt);
  EXPECT_EQ(d.resolve(gemv(), shape).source, Source::default_tactic);
  opt.settings = Settings::from_env();
  Dispatcher from_env(cpu::backend(), opt);
  EXPECT_EQ(from_env.resolve(gemv(), shape).tactic, other);
}

// An override the op cannot run is refused when the shape is resolved, naming the tactic.
TEST_F(DispatcherTest, OverrideTheOpCannotRunIsRefusedAtResolution) {
  set(tactic_env_name("gemv.f32"), "gemv.f32:no_such_field=3");
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  try {
    d.resolve(gemv(), Shape{{2, 32, 64}, DType::f32});
    FAIL() << "accepted an override the op cannot run";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("no_such_field"), std::string::npos) << e.what();
  }
}

TEST_F(DispatcherTest, CacheOffIgnoresTheCache) {
  set("HONE_CACHE", "off");
  set("HONE_AUTOTUNE", "1");
  DispatcherOptions opt = DispatcherOptions::from_env();
  EXPECT_FALSE(opt.use_cache);
  opt.tune.measure.cold = false;
  Dispatcher d(cpu::backend(), opt);
  EXPECT_EQ(d.resolve(gemv(), Shape{{1, 16, 32}, DType::f32}).source, Source::tuned);
  EXPECT_FALSE(fs::exists(dir_ / "tuning-cache.json"));
}

TEST_F(DispatcherTest, InvalidShapeIsRejectedWithItsValue) {
  Dispatcher d(cpu::backend(), DispatcherOptions::from_env());
  const TunableOp *qmv = Registry::global().find("qmv.affine", "cpu");
  ASSERT_NE(qmv, nullptr);
  try {
    d.lookup(*qmv, Shape{{1, 64, 100, 4, 64}, DType::f32});
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace hone

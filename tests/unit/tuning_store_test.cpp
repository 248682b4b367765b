#include "hone/tuning_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <unistd.h>

#include "cpu/cpu_backend.h"
#include "hone/backend.h"
#include "hone/error.h"
#include "hone/op.h"
#include "hone/registry.h"

namespace hone {
namespace {

namespace fs = std::filesystem;

const TunableOp &gemv() {
  const TunableOp *op = Registry::global().find("gemv.f32", "cpu");
  EXPECT_NE(op, nullptr);
  return *op;
}

// Warm tunes with the fewest samples: the problems are tiny and the picks do not matter here.
TuneOptions quick() {
  TuneOptions o;
  o.measure.cold = false;
  o.tuner.samples = 5;
  return o;
}

// Each test gets an empty directory for its cache file.
class TuningStoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hone-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "tuning-cache.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  TuningStore store() { return TuningStore(cpu::backend(), path_, /*cold=*/false); }
  // Rewrites the tactic of the cached entry of `bucket_`.
  void plant(const std::string &tactic) {
    Cache c(path_);
    c.load();
    const CacheEntry *e = c.find_any(store().key(gemv(), bucket_));
    ASSERT_NE(e, nullptr);
    CacheEntry changed = *e;
    changed.tactic = tactic;
    c.put(changed);
    c.save();
  }

  fs::path dir_, path_;
  const Shape bucket_{{2, 32, 64}, DType::f32};
};

TEST_F(TuningStoreTest, FindSaysAbsentThenUsableAfterATune) {
  EXPECT_EQ(store().find(gemv(), bucket_).status, Lookup::absent);
  TuningStore s = store();
  const TunedPick tuned = s.find_or_tune(gemv(), bucket_, quick());
  EXPECT_FALSE(tuned.cached);
  ASSERT_TRUE(tuned.report.has_value());
  EXPECT_TRUE(tuned.save_error.empty());
  EXPECT_EQ(tuned.found.status, Lookup::absent);

  const CacheLookup found = store().find(gemv(), bucket_);
  ASSERT_EQ(found.status, Lookup::usable) << found.reason;
  EXPECT_EQ(found.tactic, tuned.tactic);
  TuningStore again = store();
  const TunedPick cached = again.find_or_tune(gemv(), bucket_, quick());
  EXPECT_TRUE(cached.cached);
  EXPECT_FALSE(cached.report.has_value()); // nothing measured
  EXPECT_EQ(cached.tactic, tuned.tactic);
}

// A cached tactic this build cannot run -- a parameter value no config has, a tactic the tuner
// never offers for the bucket, another op's, or garbage -- is as unusable as a stale entry and
// is re-tuned by find_or_tune().
TEST_F(TuningStoreTest, AnEntryThisBuildCannotRunIsUnrunnableAndRetuned) {
  {
    TuningStore s = store();
    s.find_or_tune(gemv(), bucket_, quick());
  }
  const struct {
    const char *tactic;
    const char *reason;
  } cases[] = {
      {"gemv.f32:rows_per_block=3,cols_per_block=4,k_unroll=8,threads=1",
       "rows_per_block=3 is not one of"},
      {"gemv.f32:rows_per_block=2,cols_per_block=4,k_unroll=8,threads=4095",
       "not one of this build's candidates"},
      {"qmv.affine:rows_per_block=1,cols_per_block=8,k_unroll=4,threads=1", "not a cpu gemv.f32"},
      {"%% not a tactic", "tactic"},
  };
  for (const auto &c : cases) {
    plant(c.tactic);
    const CacheLookup found = store().find(gemv(), bucket_);
    EXPECT_EQ(found.status, Lookup::unrunnable) << c.tactic;
    EXPECT_NE(found.reason.find(c.reason), std::string::npos) << c.tactic << ": " << found.reason;
    TuningStore s = store();
    const TunedPick p = s.find_or_tune(gemv(), bucket_, quick());
    EXPECT_FALSE(p.cached) << c.tactic;
    EXPECT_EQ(p.found.status, Lookup::unrunnable) << c.tactic;
    EXPECT_EQ(store().find(gemv(), bucket_).status, Lookup::usable) << c.tactic;
  }
}

TEST_F(TuningStoreTest, OtherMetadataIsStale) {
  {
    TuningStore s = store();
    s.find_or_tune(gemv(), bucket_, quick());
  }
  // The same file judged as a cold store: the entries were measured warm.
  const CacheLookup found = TuningStore(cpu::backend(), path_, /*cold=*/true).find(gemv(), bucket_);
  EXPECT_EQ(found.status, Lookup::stale);
  EXPECT_NE(found.reason.find("method"), std::string::npos) << found.reason;
}

// A save that fails does not lose the tune: the pick is returned, the failure said.
TEST_F(TuningStoreTest, AFailedSaveKeepsThePick) {
  { std::ofstream(dir_ / "file") << "x"; } // a regular file where a directory is needed
  TuningStore s(cpu::backend(), dir_ / "file" / "cache" / "tuning-cache.json", /*cold=*/false);
  const TunedPick p = s.find_or_tune(gemv(), bucket_, quick());
  ASSERT_TRUE(p.report.has_value());
  EXPECT_EQ(p.tactic, p.report->result.pick());
  EXPECT_NE(p.save_error.find("cannot create cache directory"), std::string::npos) << p.save_error;
  EXPECT_THROW(s.save(), Error); // still recorded, and still failing
}

TEST_F(TuningStoreTest, WithoutACacheNothingIsFoundOrWritten) {
  TuningStore s(cpu::backend(), std::nullopt, /*cold=*/false);
  EXPECT_FALSE(s.enabled());
  const TunedPick p = s.find_or_tune(gemv(), bucket_, quick());
  EXPECT_FALSE(p.cached);
  EXPECT_TRUE(p.save_error.empty());
  EXPECT_EQ(s.find(gemv(), bucket_).status, Lookup::absent);
  EXPECT_TRUE(fs::is_empty(dir_));
}

// The CPU backend with `available` bytes of free memory.
class SmallBackend final : public Backend {
public:
  explicit SmallBackend(size_t available) : available_(available) {}
  const DeviceInfo &info() const override { return cpu::backend().info(); }
  Timer &timer() override { return cpu::backend().timer(); }
  void sync() override { cpu::backend().sync(); }
  void flush_llc() override { cpu::backend().flush_llc(); }
  std::string method_id() const override { return cpu::backend().method_id(); }
  std::string kernel_build_id() const override { return cpu::backend().kernel_build_id(); }
  std::optional<size_t> available_memory_bytes() const override { return available_; }

private:
  size_t available_;
};

// gemv.f32, counting prepare() calls.
class CountingOp final : public TunableOp {
public:
  std::string_view name() const override { return gemv().name(); }
  int version() const override { return gemv().version(); }
  std::string_view backend() const override { return gemv().backend(); }
  DType dtype() const override { return gemv().dtype(); }
  const BucketSpec &buckets() const override { return gemv().buckets(); }
  std::vector<Tactic> candidates(const Shape &b) const override { return gemv().candidates(b); }
  Tactic default_tactic(const Shape &b) const override { return gemv().default_tactic(b); }
  void validate(const Shape &s) const override { gemv().validate(s); }
  std::unique_ptr<Workload> prepare(const Shape &s) const override {
    ++prepared;
    return gemv().prepare(s);
  }
  std::optional<WorkloadBytes> workload_bytes(const Shape &s) const override {
    return gemv().workload_bytes(s);
  }
  mutable int prepared = 0;
};

// A shape inside the buckets that does not fit in memory is refused before anything is
// allocated, naming the bytes it needs and the bytes there are.
TEST_F(TuningStoreTest, AShapeThatDoesNotFitIsRefusedBeforePreparing) {
  const Shape big{{1, 4096, 4096}, DType::f32}; // 64 MiB of weights
  const size_t need = gemv().workload_bytes(big)->total(1);
  EXPECT_EQ(need, (4096u * 4096 + 4096) * 4 + 4096 * 12);
  SmallBackend small(1 << 20);
  CountingOp op;
  TuningStore s(small, std::nullopt, /*cold=*/false);
  try {
    s.tune(op, big, quick());
    FAIL() << "a shape needing " << need << " bytes was tuned in 1 MiB";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find("needs " + std::to_string(need) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("has 1048576 bytes"), std::string::npos) << what;
  }
  EXPECT_EQ(op.prepared, 0);
  SmallBackend roomy(need);
  EXPECT_EQ(memory_shortfall(roomy, op, big), std::nullopt);
  EXPECT_NE(memory_shortfall(SmallBackend(need - 1), op, big), std::nullopt);
}

} // namespace
} // namespace hone

// The tuner end to end on the GPU: tune a gemv.bf16 bucket, store the pick in a cache under
// a temporary HONE_CACHE_DIR, and let a new Dispatcher serve it from the cache, untuned.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "device_test.h"
#include "hone/cache.h"
#include "hone/dispatcher.h"
#include "hone/key.h"
#include "hone/registry.h"
#include "hone/tune.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;

class TuneEndToEndTest : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    dir_ =
        std::filesystem::temp_directory_path() / ("hone-device-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ASSERT_EQ(setenv("HONE_CACHE_DIR", dir_.c_str(), 1), 0);
    unsetenv("HONE_CACHE");
    unsetenv("HONE_AUTOTUNE");
    unsetenv("HONE_TACTIC_GEMV_BF16");
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      unsetenv("HONE_CACHE_DIR");
    }
  }
  std::filesystem::path dir_;
};

TEST_F(TuneEndToEndTest, TunedPickIsServedFromTheCache) {
  Backend &be = backend();
  const TunableOp *op = Registry::global().find("gemv.bf16", "cuda");
  ASSERT_NE(op, nullptr);
  // rows=12 lies in the rows=16 bucket: the tune covers the bucket, the lookup the shape.
  const Shape shape{{12, 4096, 4096}, DType::bf16};
  const Shape bucket = op->buckets().map(shape).value();
  EXPECT_EQ(bucket[0], 16);

  TuneOptions options;
  options.tuner.samples = 5;
  const TuneReport report = tune_bucket(be, *op, bucket, options);
  EXPECT_EQ(report.numerics, Numerics::batch_invariant);
  EXPECT_EQ(report.key, cache_key(*op, bucket, be.info().model));
  EXPECT_GE(report.batch, 1);
  EXPECT_GE(report.rotation.copies, 1);
  const TuneResult &r = report.result;
  EXPECT_EQ(r.candidates[r.default_index].status, Status::ok);
  EXPECT_EQ(r.candidates[r.pick_index].status, Status::ok);
  EXPECT_GT(r.default_s, 0);
  EXPECT_GT(r.pick_s, 0);
  std::printf("tuned %s: %zu candidates, pick %s ratio %.3f (noise floor %.4f, margin %.3f), "
              "default %.2f us, batch %d, copies %d\n",
              report.bucket_text.c_str(), r.candidates.size(), r.pick().str().c_str(), r.ratio,
              r.noise_floor, r.margin, r.default_s * 1e6, report.batch, report.rotation.copies);

  {
    Cache cache(Cache::default_path());
    EXPECT_EQ(cache.path().parent_path(), dir_);
    cache.load();
    cache.put(to_cache_entry(report, current_metadata(be)));
    cache.save();
  }
  ASSERT_TRUE(std::filesystem::exists(dir_ / "tuning-cache.json"));

  Dispatcher dispatcher(be, DispatcherOptions::from_env());
  const Resolution &res = dispatcher.resolve(*op, shape);
  EXPECT_EQ(res.source, Source::cache) << to_string(res.source);
  EXPECT_EQ(res.tactic, r.pick());
  EXPECT_EQ(res.key, report.key);
  EXPECT_EQ(dispatcher.tunes(), 0u);
  // The memoised answer is the same object.
  EXPECT_EQ(&dispatcher.lookup(*op, shape), &res.tactic);
}

} // namespace
} // namespace hone::cuda

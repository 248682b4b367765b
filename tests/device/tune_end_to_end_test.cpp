// The tuner end to end on the GPU: tune a gemv.bf16 bucket, store the pick in a cache under
// a temporary HONE_CACHE_DIR, and let a new Dispatcher serve it from the cache, untuned.
#include <gtest/gtest.h>

#include "hone/registry.h"
#include "hone/tune.h"
#include "op_test_helpers.h"

namespace hone::cuda {
namespace {

using testing::CacheDirTest;
using testing::expect_served_from_cache;
using testing::tune_and_check;

class TuneEndToEndTest : public CacheDirTest {
protected:
  TuneEndToEndTest() : CacheDirTest("hone-device-test-", "HONE_TACTIC_GEMV_BF16") {}
};

TEST_F(TuneEndToEndTest, TunedPickIsServedFromTheCache) {
  Backend &be = backend();
  const TunableOp *op = Registry::global().find("gemv.bf16", "cuda");
  ASSERT_NE(op, nullptr);
  // rows=12 lies in the rows=16 bucket: the tune covers the bucket, the lookup the shape.
  const Shape shape{{12, 4096, 4096}, DType::bf16};
  const Shape bucket = op->buckets().map(shape).value();
  EXPECT_EQ(bucket[0], 16);

  const TuneReport report = tune_and_check(be, *op, bucket);
  expect_served_from_cache(be, *op, shape, report, dir_);
}

} // namespace
} // namespace hone::cuda

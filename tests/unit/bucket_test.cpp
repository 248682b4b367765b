#include "hone/bucket.h"

#include <gtest/gtest.h>

namespace hone {
namespace {

TEST(Bucket, ExactKeepsValuesAndBounds) {
  DimSpec d = DimSpec::exact("n", 1, 100);
  EXPECT_EQ(d.map(0), std::nullopt); // below the lower bound
  EXPECT_EQ(d.map(1), 1);            // lower bound inclusive
  EXPECT_EQ(d.map(37), 37);
  EXPECT_EQ(d.map(100), 100); // upper bound inclusive
  EXPECT_EQ(d.map(101), std::nullopt);
}

TEST(Bucket, Pow2RoundsToNearestInLog2) {
  DimSpec d = DimSpec::pow2("m", 1, 1024);
  EXPECT_EQ(d.map(0), std::nullopt);
  EXPECT_EQ(d.map(1), 1);
  for (int64_t p = 1; p <= 1024; p <<= 1)
    EXPECT_EQ(d.map(p), p) << p; // powers of two map to themselves
  EXPECT_EQ(d.map(3), 4);        // 3^2 = 9 >= 2 * 4
  EXPECT_EQ(d.map(5), 4);        // 25 < 4 * 8
  EXPECT_EQ(d.map(6), 8);        // 36 >= 32
  EXPECT_EQ(d.map(11), 8);       // 121 < 128
  EXPECT_EQ(d.map(12), 16);
  EXPECT_EQ(d.map(1000), 1024);
  EXPECT_EQ(d.map(1025), std::nullopt);
}

TEST(Bucket, Pow2NeverLeavesItsBounds) {
  DimSpec d = DimSpec::pow2("m", 1, 48);
  EXPECT_EQ(d.map(47), 32); // 64 would be out of bounds
  EXPECT_EQ(d.map(48), 32);
}

TEST(Bucket, ExactThenPow2ForDecodeRows) {
  DimSpec d = DimSpec::exact_then_pow2("rows", 1, 32, 8);
  EXPECT_EQ(d.map(0), std::nullopt);
  for (int64_t r = 1; r <= 8; ++r)
    EXPECT_EQ(d.map(r), r);
  EXPECT_EQ(d.map(9), 8);
  EXPECT_EQ(d.map(12), 16);
  EXPECT_EQ(d.map(16), 16);
  EXPECT_EQ(d.map(24), 32);
  EXPECT_EQ(d.map(32), 32);
  EXPECT_EQ(d.map(33), std::nullopt);
  const std::vector<int64_t> reps{1, 2, 3, 4, 5, 6, 7, 8, 16, 32};
  EXPECT_EQ(d.representatives(), reps);
}

TEST(Bucket, GridRoundsToNearestTiesUp) {
  DimSpec d = DimSpec::grid("chunk", {64, 256, 128});
  EXPECT_EQ(d.map(63), std::nullopt);
  EXPECT_EQ(d.map(64), 64);
  EXPECT_EQ(d.map(95), 64);
  EXPECT_EQ(d.map(96), 128); // tie rounds up
  EXPECT_EQ(d.map(256), 256);
  EXPECT_EQ(d.map(257), std::nullopt);
}

TEST(Bucket, OneOfAcceptsOnlyListedValues) {
  DimSpec d = DimSpec::one_of("group", {32, 64, 128});
  EXPECT_EQ(d.map(64), 64);
  EXPECT_EQ(d.map(65), std::nullopt);
  EXPECT_EQ(d.map(0), std::nullopt);
}

TEST(Bucket, SpecMapsWholeShapesAndDescribesThem) {
  BucketSpec spec{{DimSpec::exact_then_pow2("rows", 1, 32, 8), DimSpec::exact("n", 1, 1 << 20),
                   DimSpec::exact("k", 1, 1 << 20)}};
  auto b = spec.map(Shape{{12, 4096, 1024}, DType::f32});
  ASSERT_TRUE(b);
  EXPECT_EQ(spec.describe(*b), "rows=16,n=4096,k=1024");
  EXPECT_EQ(b->dtype, DType::f32);
  EXPECT_FALSE(spec.map(Shape{{40, 4096, 1024}, DType::f32}));
  EXPECT_FALSE(spec.map(Shape{{4, 4096}, DType::f32})); // wrong rank
  EXPECT_EQ(spec.index_of("k"), 2);
  EXPECT_EQ(spec.index_of("z"), -1);
}

} // namespace
} // namespace hone

// Row counts round up: the tactic of bucket 16 serves 9..16 rows with tiles that cover them,
// where the nearest power of two would hand 9..11 rows to a tactic tuned for 8.
TEST(BucketPow2Up, RoundsUpPastTheExactRange) {
  const hone::DimSpec d = hone::DimSpec::exact_then_pow2_up("rows", 1, 32, 8);
  EXPECT_EQ(d.policy, hone::BucketPolicy::pow2_up);
  for (int64_t v = 1; v <= 8; ++v)
    EXPECT_EQ(d.map(v), v);
  for (int64_t v = 9; v <= 16; ++v)
    EXPECT_EQ(d.map(v), 16) << v;
  for (int64_t v = 17; v <= 32; ++v)
    EXPECT_EQ(d.map(v), 32) << v;
  EXPECT_EQ(d.map(33), std::nullopt);
  EXPECT_EQ(d.map(0), std::nullopt);
  const std::vector<int64_t> reps{1, 2, 3, 4, 5, 6, 7, 8, 16, 32};
  EXPECT_EQ(d.representatives(), reps);
  // Above the exact range every value maps to a representative.
  const hone::DimSpec wide = hone::DimSpec::exact_then_pow2_up("rows", 1, 16384, 32);
  EXPECT_EQ(wide.map(33), 64);
  EXPECT_EQ(wide.map(65), 128);
  EXPECT_EQ(wide.map(8193), 16384);
}

// The CUDA gate's host logic, no device: the sampled reference rows (sampled_rows()) and the
// row count of an elementwise op's sampled reference.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/cuda_workload.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

TEST(SampledRows, AscendingDistinctFirstAndLast) {
  for (int count : {2, 3, 16, 64, 292})
    for (int64_t rows : {int64_t{count} + 1, int64_t{count} + 2, int64_t{2} * count - 1,
                         int64_t{1000}, int64_t{8192}, int64_t{65536}}) {
      if (rows <= count)
        continue;
      const std::vector<int64_t> s = sampled_rows(rows, count);
      ASSERT_EQ(s.size(), static_cast<size_t>(count)) << rows << " rows, " << count;
      EXPECT_EQ(s.front(), 0) << rows << " rows, " << count;
      EXPECT_EQ(s.back(), rows - 1) << rows << " rows, " << count;
      EXPECT_TRUE(std::adjacent_find(s.begin(), s.end(), std::greater_equal<int64_t>()) == s.end())
          << "not strictly ascending: " << rows << " rows, " << count;
    }
}

TEST(SampledRows, EvenlySpread) {
  // Gaps differ by at most one row: every tile as tall as the widest gap holds a sampled row.
  const std::vector<int64_t> s = sampled_rows(8192, 292);
  int64_t widest = 0, narrowest = 8192;
  for (size_t i = 1; i < s.size(); ++i) {
    widest = std::max(widest, s[i] - s[i - 1]);
    narrowest = std::min(narrowest, s[i] - s[i - 1]);
  }
  EXPECT_LE(widest - narrowest, 1);
  EXPECT_EQ(widest, (8192 - 1 + 290) / 291);
}

TEST(SampledRows, EmptyWhenEveryRowIsChecked) {
  EXPECT_TRUE(sampled_rows(1, 16).empty());
  EXPECT_TRUE(sampled_rows(15, 16).empty());
  EXPECT_TRUE(sampled_rows(16, 16).empty());
  EXPECT_EQ(sampled_rows(17, 16).size(), 16u);
  EXPECT_THROW(sampled_rows(100, 1), Error);
}

TEST(ElementwiseReferenceRowCount, BoundedOutputsAtLeastSixteenRows) {
  // silu_mul at inter=14336 (Llama 3.1 8B): 292 rows, 4.19 M outputs of the 117 M at 8192 rows.
  EXPECT_EQ(elementwise_reference_row_count(14336), 292);
  EXPECT_LE(int64_t{elementwise_reference_row_count(14336)} * 14336, kElementwiseReferenceOutputs);
  // rope at (32 + 8) x 128; rmsnorm at hidden 4096 with a residual (two outputs a row).
  EXPECT_EQ(elementwise_reference_row_count(40 * 128), 819);
  EXPECT_EQ(elementwise_reference_row_count(2 * 4096), 512);
  // Wide rows keep the floor; narrow ones check every row of any bucket.
  EXPECT_EQ(elementwise_reference_row_count(int64_t{1} << 20), kElementwiseMinReferenceRows);
  EXPECT_GE(elementwise_reference_row_count(8), 65536);
  EXPECT_THROW(elementwise_reference_row_count(0), Error);
}

} // namespace
} // namespace hone::cuda

#include "hone/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace hone {
namespace {

TEST(Stats, MedianOddEvenEmpty) {
  std::vector<double> odd{5, 1, 3};
  std::vector<double> even{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(median(odd), 3);
  EXPECT_DOUBLE_EQ(median(even), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0);
}

TEST(Stats, IqrAndRelativeSpread) {
  std::vector<double> v{1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(iqr(v), 2); // q75 = 4, q25 = 2
  EXPECT_DOUBLE_EQ(relative_spread(v), 2.0 / 3.0);
  std::vector<double> flat{7, 7, 7, 7, 7};
  EXPECT_DOUBLE_EQ(relative_spread(flat), 0);
}

} // namespace
} // namespace hone

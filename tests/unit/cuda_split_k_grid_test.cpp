// split_k_grid_ctas: the CTAs a split-K GEMV-family launch makes, which qmv.affine's staging rule
// counts against the SMs (tiles along n, round up; row groups, round up; split_k CTAs a tile).
#include <gtest/gtest.h>

#include "cuda/kernels/common/split_k_launch.h"

namespace hone::cuda {
namespace {

TEST(SplitKGrid, CountsTilesRowGroupsAndSlices) {
  // 28672 x 4096's int4 default at one row: 64 outputs a CTA, one row group, one slice.
  EXPECT_EQ(split_k_grid_ctas({.n = 28672, .rows = 1, .outputs_per_cta = 64, .rows_per_cta = 8}),
            448);
  // Partial tiles and row groups round up; split_k multiplies.
  EXPECT_EQ(split_k_grid_ctas(
                {.n = 100, .rows = 17, .outputs_per_cta = 32, .rows_per_cta = 8, .split_k = 2}),
            4 * 3 * 2);
  EXPECT_EQ(split_k_grid_ctas({.n = 1, .rows = 1, .outputs_per_cta = 128, .rows_per_cta = 32}), 1);
}

TEST(SplitKGrid, HoldsMoreCtasThanAnInt) {
  EXPECT_EQ(
      split_k_grid_ctas(
          {.n = 1 << 30, .rows = 1 << 10, .outputs_per_cta = 16, .rows_per_cta = 1, .split_k = 4}),
      (1LL << 26) * (1LL << 10) * 4);
}

} // namespace
} // namespace hone::cuda

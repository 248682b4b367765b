// `--shape` as `hone bench` and `hone tune` read it (tools/hone/shape_arg), on an op with a
// dimension that admits zero: rmsnorm's residual flag, which its cache keys spell residual=0.
// No device.
#include "hone/shape_arg.h"

#include <string>

#include <gtest/gtest.h>

#include "cuda/ops/rmsnorm_op.h"
#include "invalid_message.h"

namespace hone::cli {
namespace {

using hone::testing::invalid_message;

TEST(ShapeArg, ZeroIsTakenWhereTheDimensionAdmitsIt) {
  const cuda::RmsnormOp op;
  const Shape off = parse_shape(op, "rows=5,hidden=1536,residual=0");
  EXPECT_EQ(off[0], 5);
  EXPECT_EQ(off[1], 1536);
  EXPECT_EQ(off[2], 0);
  // The key's own text reads back as the same shape.
  EXPECT_EQ(parse_shape(op, op.buckets().describe(off)), off);
  EXPECT_EQ(parse_shape(op, "residual=1,hidden=1536,rows=5")[2], 1);
}

TEST(ShapeArg, ZeroAndNegativeValuesAreNamed) {
  const cuda::RmsnormOp op;
  // The message of parse_shape's refusal of `text` holds `named`.
  const auto expect_named = [&](const char *text, const char *named) {
    const std::string message = invalid_message([&] { parse_shape(op, text); });
    EXPECT_NE(message.find(named), std::string::npos) << text << ": " << message;
  };
  expect_named("rows=0,hidden=1536,residual=0", "'rows=0' is not a positive integer");
  expect_named("rows=1,hidden=1536,residual=-1", "'residual=-1' is not a non-negative integer");
  expect_named("rows=1,residual=0,hidden=8,residual=0", "dimension 'residual' given twice");
  expect_named("rows=1,hidden=1536", "missing dimension 'residual'");
}

} // namespace
} // namespace hone::cli

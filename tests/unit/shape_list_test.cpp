// bench/shape_list: the shape lists the benchmark matrix reads.
#include "shape_list.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "hone/error.h"
#include "hone/registry.h"

namespace {

const hone::TunableOp &gemv_f32() {
  const hone::TunableOp *op = hone::Registry::global().find("gemv.f32", "cpu");
  EXPECT_NE(op, nullptr);
  return *op;
}

std::string text_of(const std::vector<hone::Shape> &shapes, const hone::TunableOp &op) {
  std::string out;
  for (const hone::Shape &s : shapes)
    out += op.buckets().describe(s) + ";";
  return out;
}

TEST(ShapeList, EveryCombinationInFileOrderFirstDimensionSlowest) {
  const auto shapes = hone::bench::parse_shape_list("rows=1|2, k=64, n=8..9  # comment\n",
                                                    gemv_f32(), "full", "t.txt");
  EXPECT_EQ(text_of(shapes, gemv_f32()),
            "rows=1,n=8,k=64;rows=1,n=9,k=64;rows=2,n=8,k=64;rows=2,n=9,k=64;");
  for (const hone::Shape &s : shapes)
    EXPECT_EQ(s.dtype, gemv_f32().dtype());
}

TEST(ShapeList, SetsSelectTaggedLines) {
  const std::string text = "# header\n\nrows=1,n=8,k=8\nquick: rows=2,n=8,k=8\n"
                           "full: rows=3,n=8,k=8\n";
  EXPECT_EQ(text_of(hone::bench::parse_shape_list(text, gemv_f32(), "quick", "t"), gemv_f32()),
            "rows=1,n=8,k=8;rows=2,n=8,k=8;");
  EXPECT_EQ(text_of(hone::bench::parse_shape_list(text, gemv_f32(), "full", "t"), gemv_f32()),
            "rows=1,n=8,k=8;rows=3,n=8,k=8;");
}

void expect_error(const std::string &text, const std::string &fragment) {
  try {
    hone::bench::parse_shape_list(text, gemv_f32(), "full", "t.txt");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const hone::Error &e) {
    EXPECT_EQ(e.kind(), hone::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ShapeList, BadLinesAreNamed) {
  expect_error("rows=1,n=8\n", "t.txt:1: dimension 'k' missing");
  expect_error("\nrows=1,n=8,k=8,bits=4\n", "t.txt:2: 'bits=4' is not a dimension of gemv.f32");
  expect_error("rows=1,n=8,k=x8\n", "'x8' is not an integer");
  expect_error("rows=4..2,n=8,k=8\n", "empty range '4..2'");
  expect_error("rows=1,rows=2,n=8,k=8\n", "dimension 'rows' given twice");
  expect_error("slow: rows=1,n=8,k=8\n", "unknown set 'slow'");
}

TEST(ShapeList, UnreadableFileIsNamed) {
  try {
    hone::bench::read_shape_list("/nonexistent/shapes.txt", gemv_f32(), "full");
    ADD_FAILURE();
  } catch (const hone::Error &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/shapes.txt"), std::string::npos);
  }
}

// Every committed shape list (bench/shapes/**/<op>.txt) parses against its op in both sets, and
// its full set is not empty: a typo in a list fails here, not in a device call. Lists of ops
// this build does not register (the CUDA ops without the CUDA backend) are skipped.
TEST(ShapeList, EveryCommittedListParses) {
  const std::filesystem::path root = std::filesystem::path(HONE_SOURCE_DIR) / "bench" / "shapes";
  int checked = 0;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".txt")
      continue;
    const std::string name = entry.path().stem().string();
    const hone::TunableOp *op = hone::Registry::global().find(name, "cuda");
    if (!op)
      op = hone::Registry::global().find(name, "cpu");
    if (!op)
      continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(hone::bench::read_shape_list(entry.path(), *op, "quick"));
    try {
      EXPECT_FALSE(hone::bench::read_shape_list(entry.path(), *op, "full").empty());
    } catch (const hone::Error &e) {
      ADD_FAILURE() << e.what();
    }
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no shape list of a registered op under " << root;
}

} // namespace

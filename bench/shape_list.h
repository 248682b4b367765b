// The shape list of a benchmark matrix: bench/shapes/<op>.txt, one line per group of shapes.
//
//   # comment
//   rows=1|2|4|8, n=4096, k=4096            every combination (4 shapes), in the full and quick
//   sets full: rows=1..32, n=14336, k=4096       a range (inclusive), in the full set only quick:
//   rows=1|16, n=2048, k=2048        in the quick set only
//
// Dimensions are the op's bucket dimensions, every one named once, in any order.
//
//   std::vector<hone::Shape> shapes = hone::bench::read_shape_list(path, op, "quick");
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hone/op.h"

namespace hone::bench {

// The shapes of `set` ("full" or "quick") in file order, each with op.dtype(). Throws
// Error(invalid_argument) naming the file, the line and the bad item: an unknown or missing
// dimension, a value that is not an integer, an empty range, an unknown set tag.
std::vector<Shape> parse_shape_list(std::string_view text, const TunableOp &op,
                                    std::string_view set, const std::string &source);
// parse_shape_list on a file; throws Error(invalid_argument) when it cannot be read.
std::vector<Shape> read_shape_list(const std::filesystem::path &path, const TunableOp &op,
                                   std::string_view set);

} // namespace hone::bench

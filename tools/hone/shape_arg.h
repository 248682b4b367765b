// Parsing of the shape-like arguments: `--shape rows=8,n=4096,k=4096`, `--rows 1-16`,
// `--ops a,b`. Every error names the offending token.
//
//   hone::Shape s = hone::cli::parse_shape(op, "rows=8,n=4096,k=4096,bits=4,group=64");
//   std::vector<int64_t> rows = hone::cli::parse_rows("1-4,8,16");   // 1 2 3 4 8 16
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hone/op.h"
#include "hone/shape.h"

namespace hone::cli {

// "rows, n, k, bits, group": the op's dimension names in order.
std::string dim_names(const TunableOp &op);
// A shape of `op` from `name=value` tokens, one per dimension of its BucketSpec, in any
// order. Throws Error(invalid_argument) naming the token for an unknown, repeated or missing
// dimension or a value that is not a positive integer (zero is taken where the dimension's
// bucket admits it: rmsnorm's residual=0). Does not call op.validate().
Shape parse_shape(const TunableOp &op, std::string_view text);
// Row counts from "8", "1-16", "1,2,4,8" or "1-4,8,16", ascending, without repeats.
std::vector<int64_t> parse_rows(std::string_view text);
// Comma-separated items, each non-empty; throws Error(invalid_argument) naming `what`.
std::vector<std::string> split_list(std::string_view text, std::string_view what);

} // namespace hone::cli

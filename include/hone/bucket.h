// Shape buckets: each dimension of an op's shape has a policy that maps nearby values to one
// representative, so the tuning matrix stays bounded. A value outside a dimension's bounds
// is out of bucket.
//
//   hone::BucketSpec spec{{hone::DimSpec::exact_then_pow2("rows", 1, 32, 8),
//                          hone::DimSpec::exact("n", 1, 1 << 20),
//                          hone::DimSpec::grid("group", {32, 64, 128})}};
//   std::optional<hone::Shape> b = spec.map(shape);   // nullopt when out of bucket
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hone/shape.h"

namespace hone {

enum class BucketPolicy {
  exact, // the value itself
  pow2,  // nearest power of two in log2 distance (ties round up); values <= exact_max stay exact
  // The power of two at or above the value (at most hi); values <= exact_max stay exact. For
  // row counts: a tactic tuned for 16 rows serves 9..16, where its tiles cover every row,
  // whereas one tuned for 8 rows would run 9..11 as two row groups.
  pow2_up,
  grid,  // nearest listed value in linear distance (ties round up)
};

struct DimSpec {
  std::string name; // printed in problem keys: `rows=8`
  BucketPolicy policy = BucketPolicy::exact;
  int64_t lo = 1; // inclusive bounds on the raw value; outside them the shape is out of bucket
  int64_t hi = INT64_MAX;
  int64_t exact_max = 0;     // pow2, pow2_up: values in [lo, exact_max] are kept exact
  std::vector<int64_t> values; // grid and one_of: sorted representatives; bounds are its ends
  int64_t multiple_of = 1;   // raw value must be a multiple of this, else out of bucket

  static DimSpec exact(std::string name, int64_t lo, int64_t hi);
  static DimSpec pow2(std::string name, int64_t lo, int64_t hi);
  static DimSpec exact_then_pow2(std::string name, int64_t lo, int64_t hi, int64_t exact_max);
  // Exact up to exact_max, then rounded up to a power of two (BucketPolicy::pow2_up).
  static DimSpec exact_then_pow2_up(std::string name, int64_t lo, int64_t hi,
                                    int64_t exact_max);
  // An exact grid: the raw value must be one of `values` (used for bits and group size).
  static DimSpec one_of(std::string name, std::vector<int64_t> values);
  // A rounding grid: bounds are [values.front(), values.back()].
  static DimSpec grid(std::string name, std::vector<int64_t> values);

  // Representative of `value`, or nullopt when out of bounds. Never allocates.
  std::optional<int64_t> map(int64_t value) const;
  // Every representative in bounds (for enumerating a tuning matrix); exact dims with a
  // huge range return only lo and hi.
  std::vector<int64_t> representatives() const;
};

struct BucketSpec {
  std::vector<DimSpec> dims;

  // Bucketed shape, or nullopt when the rank differs or any dimension is out of bucket.
  std::optional<Shape> map(const Shape &shape) const;
  // `rows=8,n=4096,k=4096` for a (bucketed) shape.
  std::string describe(const Shape &shape) const;
  // The shape describe() wrote as `text` (every dimension, in order), of dtype `dtype`;
  // nullopt when `text` is not of that form. Values are not bucketed or bounded.
  std::optional<Shape> parse(std::string_view text, DType dtype) const;
  // Index of a dimension by name, -1 if absent.
  int index_of(std::string_view name) const;
};

} // namespace hone

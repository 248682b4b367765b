#include "hone/shape.h"

#include "hone/error.h"

namespace hone {

Shape::Shape(std::initializer_list<int64_t> values, DType type)
    : Shape(std::span<const int64_t>(values.begin(), values.size()), type) {}

Shape::Shape(std::span<const int64_t> values, DType type) : dtype(type) {
  if (values.size() > static_cast<size_t>(kMaxRank))
    HONE_INVALID_ARGUMENT("shape rank " + std::to_string(values.size()) + " exceeds " +
                          std::to_string(kMaxRank));
  rank = static_cast<int>(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    dims[i] = values[i];
}

uint64_t hash_shape(const Shape &shape) noexcept {
  uint64_t h = 1469598103934665603ull;
  // FNV-1a over 64-bit words (not bytes: this runs on every dispatch), then a final
  // avalanche so that nearby shapes spread over the table.
  auto mix = [&h](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<uint64_t>(shape.rank));
  mix(static_cast<uint64_t>(shape.dtype));
  for (int i = 0; i < shape.rank; ++i)
    mix(static_cast<uint64_t>(shape.dims[i]));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

} // namespace hone

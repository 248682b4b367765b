#include "hone/bucket.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <span>
#include <vector>

#include "hone/error.h"

namespace hone {

DimSpec DimSpec::exact(std::string name, int64_t lo, int64_t hi) {
  DimSpec d;
  d.name = std::move(name);
  d.policy = BucketPolicy::exact;
  d.lo = lo;
  d.hi = hi;
  return d;
}

DimSpec DimSpec::pow2(std::string name, int64_t lo, int64_t hi) {
  return exact_then_pow2(std::move(name), lo, hi, 0);
}

DimSpec DimSpec::exact_then_pow2(std::string name, int64_t lo, int64_t hi, int64_t exact_max) {
  DimSpec d;
  d.name = std::move(name);
  d.policy = BucketPolicy::pow2;
  d.lo = lo;
  d.hi = hi;
  d.exact_max = exact_max;
  return d;
}

DimSpec DimSpec::exact_then_pow2_up(std::string name, int64_t lo, int64_t hi,
                                    int64_t exact_max) {
  DimSpec d = exact_then_pow2(std::move(name), lo, hi, exact_max);
  d.policy = BucketPolicy::pow2_up;
  return d;
}

DimSpec DimSpec::one_of(std::string name, std::vector<int64_t> values) {
  DimSpec d = grid(std::move(name), std::move(values));
  d.policy = BucketPolicy::exact;
  return d;
}

DimSpec DimSpec::grid(std::string name, std::vector<int64_t> values) {
  if (values.empty())
    HONE_INVALID_ARGUMENT("bucket grid for '" + name + "' is empty");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  DimSpec d;
  d.name = std::move(name);
  d.policy = BucketPolicy::grid;
  d.lo = values.front();
  d.hi = values.back();
  d.values = std::move(values);
  return d;
}

namespace {
// Representative of v (lo <= v <= hi, v > exact_max) under the pow2 policy: the nearer, in
// log2 distance, of the powers of two just below and just above v, restricted to [lo, hi].
// The power below may lie in the exact range, where it is a representative too.
int64_t nearest_pow2(int64_t v, int64_t lo, int64_t hi) {
  const uint64_t u = static_cast<uint64_t>(v);
  const uint64_t lower = std::bit_floor(u);
  if (lower == u)
    return v;
  const uint64_t upper = lower << 1;
  const bool lower_ok = static_cast<int64_t>(lower) >= lo;
  const bool upper_ok = upper <= static_cast<uint64_t>(hi);
  if (!lower_ok && !upper_ok)
    return v;
  if (!lower_ok)
    return static_cast<int64_t>(upper);
  if (!upper_ok)
    return static_cast<int64_t>(lower);
  // Nearer to upper in log2 when v^2 >= lower * upper (ties round up).
  const __uint128_t sq = static_cast<__uint128_t>(u) * u;
  const __uint128_t mid = static_cast<__uint128_t>(lower) * upper;
  return static_cast<int64_t>(sq >= mid ? upper : lower);
}
} // namespace

std::optional<int64_t> DimSpec::map(int64_t value) const {
  if (value < lo || value > hi)
    return std::nullopt;
  if (multiple_of > 1 && value % multiple_of != 0)
    return std::nullopt;
  switch (policy) {
  case BucketPolicy::exact:
    if (!values.empty() && !std::binary_search(values.begin(), values.end(), value))
      return std::nullopt;
    return value;
  case BucketPolicy::pow2: {
    if (value <= exact_max || value < 1)
      return value;
    return nearest_pow2(value, lo, hi);
  }
  case BucketPolicy::pow2_up: {
    if (value <= exact_max || value < 1)
      return value;
    const int64_t up = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(value)));
    return up <= hi ? up : hi;
  }
  case BucketPolicy::grid: {
    auto it = std::lower_bound(values.begin(), values.end(), value);
    if (it == values.end())
      return values.back();
    if (*it == value || it == values.begin())
      return *it;
    const int64_t above = *it, below = *(it - 1);
    return (value - below < above - value) ? below : above; // ties round up
  }
  }
  return std::nullopt;
}

std::vector<int64_t> DimSpec::representatives() const {
  std::vector<int64_t> out;
  switch (policy) {
  case BucketPolicy::exact:
    if (!values.empty())
      return values;
    if (hi - lo <= 64) {
      for (int64_t v = lo; v <= hi; ++v)
        out.push_back(v);
    } else {
      out = {lo, hi};
    }
    return out;
  case BucketPolicy::pow2:
  case BucketPolicy::pow2_up:
    for (int64_t v = lo; v <= hi && v <= exact_max; ++v)
      out.push_back(v);
    for (int64_t p = 1; p > 0 && p <= hi; p <<= 1)
      if (p > exact_max && p >= lo)
        out.push_back(p);
    return out;
  case BucketPolicy::grid:
    return values;
  }
  return out;
}

std::optional<Shape> BucketSpec::map(const Shape &shape) const {
  if (static_cast<size_t>(shape.rank) != dims.size())
    return std::nullopt;
  Shape out;
  out.rank = shape.rank;
  out.dtype = shape.dtype;
  for (int i = 0; i < shape.rank; ++i) {
    auto v = dims[static_cast<size_t>(i)].map(shape.dims[i]);
    if (!v)
      return std::nullopt;
    out.dims[i] = *v;
  }
  return out;
}

std::string BucketSpec::describe(const Shape &shape) const {
  std::string out;
  for (int i = 0; i < shape.rank; ++i) {
    if (i)
      out += ',';
    // NOTE: appended piecewise; `"d" + std::to_string(i)` here made GCC 12 warn -Wrestrict
    // (a false positive on the inlined string insert).
    if (static_cast<size_t>(i) < dims.size()) {
      out += dims[static_cast<size_t>(i)].name;
    } else {
      out += 'd';
      out += std::to_string(i);
    }
    out += '=';
    out += std::to_string(shape.dims[i]);
  }
  return out;
}

std::optional<Shape> BucketSpec::parse(std::string_view text, DType dtype) const {
  std::vector<int64_t> values;
  for (const DimSpec &d : dims) {
    if (!values.empty()) {
      if (!text.starts_with(','))
        return std::nullopt;
      text.remove_prefix(1);
    }
    if (!text.starts_with(d.name) || text.substr(d.name.size(), 1) != "=")
      return std::nullopt;
    text.remove_prefix(d.name.size() + 1);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end == text.data())
      return std::nullopt;
    text.remove_prefix(static_cast<size_t>(end - text.data()));
    values.push_back(v);
  }
  if (!text.empty() || values.empty() || values.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  return Shape(std::span<const int64_t>(values), dtype);
}

int BucketSpec::index_of(std::string_view name) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name == name)
      return static_cast<int>(i);
  return -1;
}

} // namespace hone

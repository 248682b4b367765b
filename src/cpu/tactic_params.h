// Shared by the CPU kernels: indexing their compile-time parameter tables and validating a
// tactic's parameters against them, with messages that name the bad value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hone::cpu {

// Position of `v` in `values` (a std::array of compiled parameter values), or -1.
constexpr int index_of(const auto &values, int64_t v) {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == v)
      return static_cast<int>(i);
  return -1;
}

// "name=value is not one of a, b, c" when `value` is not in `values`, else nullopt.
inline std::optional<std::string> not_one_of(std::string_view name, int64_t value,
                                             const auto &values) {
  if (index_of(values, value) >= 0)
    return std::nullopt;
  std::string out = std::string(name) + "=" + std::to_string(value) + " is not one of ";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out;
}

// "name=value is not in [lo, hi]" when `value` is outside the bounds, else nullopt.
inline std::optional<std::string> not_in_range(std::string_view name, int64_t value, int64_t lo,
                                               int64_t hi) {
  if (value >= lo && value <= hi)
    return std::nullopt;
  return std::string(name) + "=" + std::to_string(value) + " is not in [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "]";
}

} // namespace hone::cpu

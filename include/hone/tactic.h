// A tactic is one kernel configuration: a kernel name plus ordered integer parameters.
// Its canonical string is its identity, e.g. `gemv.f32:rows_per_block=4,cols_per_block=8`.
//
//   hone::Tactic t{"gemv.f32", {{"rows_per_block", 4}, {"threads", 2}}};
//   auto same = hone::Tactic::parse(t.str());   // same == t
//   int64_t rb = t.param("rows_per_block");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hone {

struct Tactic {
  std::string kernel;
  std::vector<std::pair<std::string, int64_t>> params; // order is part of the identity

  // Canonical text `kernel:name=value,name=value`; `kernel` alone when there are no params.
  std::string str() const;
  // Inverse of str(); throws Error(invalid_argument) naming the bad text.
  static Tactic parse(std::string_view text);

  // Value of a parameter; throws Error(invalid_argument) when absent.
  int64_t param(std::string_view name) const;
  // Value of a parameter, or `fallback` when absent.
  int64_t param_or(std::string_view name, int64_t fallback) const;

  bool empty() const { return kernel.empty(); }
  friend bool operator==(const Tactic &, const Tactic &) = default;
};

} // namespace hone

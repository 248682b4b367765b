// Tactic spelling of the split-K kernel configs (gemv.bf16, qmv.affine): integer fields in a
// fixed order, then one optional field spelled only when set, so that the tactics of configs
// without it keep their spelling.
//
//   Tactic t = config_tactic("qmv.affine.mma", kFields, {8, 4, 1, 16, 1}, "async", c.async);
//   std::vector<int> v = config_fields(t, kFields, "async", &c.async);
#pragma once

#include <span>
#include <string>
#include <vector>

#include "hone/tactic.h"

namespace hone::cuda {

// `kernel:fields[0]=values[0],...`, then `optional=optional_value` when optional_value != 0.
// REQUIRES: fields.size() == values.size().
Tactic config_tactic(const std::string &kernel, std::span<const char *const> fields,
                     std::span<const int> values, const char *optional, int optional_value);

// The values of `fields`, in order; `*optional_value` is the optional field's value, 0 when
// absent. Throws Error(invalid_argument) unless the parameters are exactly `fields`, optionally
// followed by `optional`.
std::vector<int> config_fields(const Tactic &tactic, std::span<const char *const> fields,
                               const char *optional, int *optional_value);

// `tactic` without a last parameter `name` (an optional field spelled only where set), whose
// value goes to `*value`, which is left as it is where the field is absent. Throws
// Error(invalid_argument) naming a value of 1, 2 or 4 `unit` other than those.
Tactic take_last_power_field(Tactic tactic, const char *name, const char *unit, int *value);

// False, with `text` in `*reason` when reason is not null: the shape of every can_implement.
inline bool refuse(std::string *reason, std::string text) {
  if (reason)
    *reason = std::move(text);
  return false;
}

} // namespace hone::cuda

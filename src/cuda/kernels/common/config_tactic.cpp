#include "cuda/kernels/common/config_tactic.h"

#include "hone/error.h"

namespace hone::cuda {

Tactic config_tactic(const std::string &kernel, std::span<const char *const> fields,
                     std::span<const int> values, const char *optional, int optional_value) {
  Tactic t{kernel, {}};
  for (size_t i = 0; i < fields.size(); ++i)
    t.params.push_back({fields[i], values[i]});
  if (optional_value)
    t.params.push_back({optional, optional_value});
  return t;
}

std::vector<int> config_fields(const Tactic &tactic, std::span<const char *const> fields,
                               const char *optional, int *optional_value) {
  const bool has_optional =
      tactic.params.size() == fields.size() + 1 && tactic.params.back().first == optional;
  if (tactic.params.size() != fields.size() && !has_optional) {
    std::string names;
    for (size_t i = 0; i < fields.size(); ++i)
      names += (i ? ", " : "") + std::string(fields[i]);
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' needs exactly the parameters " + names +
                          " (and optionally " + optional + ")");
  }
  std::vector<int> values;
  for (const char *name : fields)
    values.push_back(static_cast<int>(tactic.param(name)));
  *optional_value = has_optional ? static_cast<int>(tactic.param(optional)) : 0;
  return values;
}

Tactic take_last_power_field(Tactic tactic, const char *name, const char *unit, int *value) {
  if (tactic.params.empty() || tactic.params.back().first != name)
    return tactic;
  const int64_t v = tactic.params.back().second;
  if (v != 1 && v != 2 && v != 4)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': " + name + "=" + std::to_string(v) +
                          " is not 1, 2 or 4 " + unit);
  *value = static_cast<int>(v);
  tactic.params.pop_back();
  return tactic;
}

} // namespace hone::cuda

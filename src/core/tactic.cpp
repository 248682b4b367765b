#include "hone/tactic.h"

#include <cctype>
#include <charconv>

#include "hone/error.h"

namespace hone {

namespace {
bool valid_name(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}
} // namespace

std::string Tactic::str() const {
  std::string out = kernel;
  for (size_t i = 0; i < params.size(); ++i) {
    out += i == 0 ? ':' : ',';
    out += params[i].first;
    out += '=';
    out += std::to_string(params[i].second);
  }
  return out;
}

Tactic Tactic::parse(std::string_view text) {
  Tactic t;
  const auto colon = text.find(':');
  t.kernel = std::string(text.substr(0, colon));
  if (!valid_name(t.kernel))
    HONE_INVALID_ARGUMENT("malformed tactic '" + std::string(text) + "': bad kernel name");
  if (colon == std::string_view::npos)
    return t;
  std::string_view rest = text.substr(colon + 1);
  while (true) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      HONE_INVALID_ARGUMENT("malformed tactic '" + std::string(text) + "': parameter '" +
                            std::string(item) + "' has no '='");
    std::string_view name = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (!valid_name(name) || ec != std::errc() || ptr != value.data() + value.size())
      HONE_INVALID_ARGUMENT("malformed tactic '" + std::string(text) + "': parameter '" +
                            std::string(item) + "' is not name=integer");
    for (const auto &p : t.params)
      if (p.first == name)
        HONE_INVALID_ARGUMENT("malformed tactic '" + std::string(text) + "': parameter '" +
                              std::string(name) + "' given twice");
    t.params.emplace_back(std::string(name), v);
    if (comma == std::string_view::npos)
      break;
    rest = rest.substr(comma + 1);
  }
  return t;
}

int64_t Tactic::param(std::string_view name) const {
  for (const auto &p : params)
    if (p.first == name)
      return p.second;
  HONE_INVALID_ARGUMENT("tactic '" + str() + "' has no parameter '" + std::string(name) + "'");
}

int64_t Tactic::param_or(std::string_view name, int64_t fallback) const {
  for (const auto &p : params)
    if (p.first == name)
      return p.second;
  return fallback;
}

} // namespace hone

#include "hone/op.h"

#include <cctype>
#include <cstdlib>

#include "hone/error.h"

namespace hone {

const char *to_string(Status status) {
  switch (status) {
  case Status::ok:
    return "ok";
  case Status::cannot_implement:
    return "cannot_implement";
  case Status::gate_failed:
    return "gate_failed";
  case Status::launch_failed:
    return "launch_failed";
  case Status::rejected:
    return "rejected";
  }
  return "?";
}

const char *to_string(Numerics numerics) {
  return numerics == Numerics::batch_invariant ? "batch_invariant" : "tolerance";
}

std::string tactic_env_name(std::string_view op_name) {
  std::string out = "HONE_TACTIC_";
  for (char c : op_name)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

std::optional<Tactic> TunableOp::env_override(const Shape &) const {
  const std::string var = tactic_env_name(name());
  const char *value = std::getenv(var.c_str());
  if (!value || !*value)
    return std::nullopt;
  try {
    return Tactic::parse(value);
  } catch (const Error &e) {
    HONE_INVALID_ARGUMENT(var + ": " + e.what());
  }
}

} // namespace hone

#include "hone/op.h"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "hone/error.h"
#include "hone/log.h"

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

namespace {

std::string env_suffix(std::string_view text) {
  std::string out;
  for (char c : text)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

std::optional<Tactic> parse_env(const std::string &var, const char *value) {
  try {
    return Tactic::parse(value);
  } catch (const Error &e) {
    HONE_INVALID_ARGUMENT(var + ": " + e.what());
  }
}

// One warning per variable and value for the process, not one per resolved shape.
void warn_once(const std::string &text) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(text).second)
    log_warn(text);
}

} // namespace

std::string tactic_env_name(std::string_view op_name) {
  return "HONE_TACTIC_" + env_suffix(op_name);
}

std::string tactic_env_name(std::string_view backend, std::string_view op_name) {
  return "HONE_TACTIC_" + env_suffix(backend) + "_" + env_suffix(op_name);
}

std::optional<Tactic> TunableOp::env_override(const Shape &) const {
  const std::string specific = tactic_env_name(backend(), name());
  if (const char *value = std::getenv(specific.c_str()); value && *value) {
    std::optional<Tactic> t = parse_env(specific, value);
    if (!owns_kernel(t->kernel))
      HONE_INVALID_ARGUMENT(specific + ": tactic '" + t->str() + "' is not a " +
                            std::string(backend()) + " " + std::string(name()) + " tactic");
    return t;
  }
  const std::string shared = tactic_env_name(name());
  const char *value = std::getenv(shared.c_str());
  if (!value || !*value)
    return std::nullopt;
  std::optional<Tactic> t = parse_env(shared, value);
  if (!owns_kernel(t->kernel)) {
    warn_once(shared + "=" + value + " names kernel '" + t->kernel + "', not one of the " +
              std::string(backend()) + " " + std::string(name()) + " kernels; ignored on " +
              std::string(backend()) + " (" + specific + " sets this backend alone)");
    return std::nullopt;
  }
  return t;
}

} // namespace hone

#include "hone/op.h"

#include <cctype>
#include <mutex>
#include <set>
#include <string>

#include "hone/error.h"
#include "hone/log.h"
#include "hone/settings.h"

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

// The tactic in variable `var`, which `op` must be able to compile; throws
// Error(invalid_argument) naming the variable otherwise.
Tactic parse_env(const TunableOp &op, const std::string &var, const std::string &value) {
  try {
    Tactic t = Tactic::parse(value);
    if (op.owns_kernel(t.kernel))
      op.compile(t);
    return t;
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::invalid_argument)
      throw;
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

std::optional<Tactic> TunableOp::env_override(const Shape &, const Settings &settings) const {
  const std::string specific = tactic_env_name(backend(), name());
  if (std::optional<std::string_view> value = settings.tactic(specific)) {
    Tactic t = parse_env(*this, specific, std::string(*value));
    if (!owns_kernel(t.kernel))
      HONE_INVALID_ARGUMENT(specific + ": tactic '" + t.str() + "' is not a " +
                            std::string(backend()) + " " + std::string(name()) + " tactic");
    return t;
  }
  const std::string shared = tactic_env_name(name());
  const std::optional<std::string_view> value = settings.tactic(shared);
  if (!value)
    return std::nullopt;
  Tactic t = parse_env(*this, shared, std::string(*value));
  if (!owns_kernel(t.kernel)) {
    warn_once(shared + "=" + std::string(*value) + " names kernel '" + t.kernel +
              "', not one of the " + std::string(backend()) + " " + std::string(name()) +
              " kernels; ignored on " + std::string(backend()) + " (" + specific +
              " sets this backend alone)");
    return std::nullopt;
  }
  return t;
}

std::optional<std::string> TunableOp::unrunnable_reason(const Tactic &tactic,
                                                        const Shape &bucket) const {
  if (!owns_kernel(tactic.kernel))
    return "tactic '" + tactic.str() + "' is not a " + std::string(backend()) + " " +
           std::string(name()) + " tactic";
  try {
    compile(tactic);
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::invalid_argument)
      throw;
    return e.what();
  }
  if (tactic == default_tactic(bucket))
    return std::nullopt;
  for (const Tactic &c : candidates(bucket))
    if (c == tactic)
      return std::nullopt;
  return "tactic '" + tactic.str() + "' is not one of this build's candidates for " +
         buckets().describe(bucket);
}

} // namespace hone

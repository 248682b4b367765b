#include "hone/error.h"

#include <string>

namespace hone {

namespace {
std::string located(const std::string &message, const char *file, int line) {
  std::string f = file ? file : "?";
  // Keep the path relative to the source tree for readable messages.
  if (auto pos = f.find("/src/"); pos != std::string::npos)
    f = f.substr(pos + 1);
  else if (auto pos2 = f.find("/tools/"); pos2 != std::string::npos)
    f = f.substr(pos2 + 1);
  return message + " [" + f + ":" + std::to_string(line) + "]";
}
} // namespace

Error::Error(ErrorKind kind, const std::string &message, const char *file, int line)
    : std::runtime_error(kind == ErrorKind::invalid_argument ? message
                                                             : located(message, file, line)),
      kind_(kind) {}

namespace detail {
void throw_error(ErrorKind kind, const std::string &message, const char *file, int line) {
  throw Error(kind, message, file, line);
}
} // namespace detail

} // namespace hone

#include "hone/global_options.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "hone/error.h"
#include "hone/registry.h"

namespace hone::cli {

Backend &selected_backend(const GlobalOptions &options) {
  return options.backend.empty() ? best_backend() : get_backend(options.backend);
}

const TunableOp &find_op(std::string_view name, const Backend &backend) {
  const std::string &backend_name = backend.info().backend;
  const Registry &registry = Registry::global();
  if (const TunableOp *op = registry.find(name, backend_name))
    return *op;
  std::string known;
  for (const TunableOp *op : registry.ops(backend_name))
    known += (known.empty() ? "" : ", ") + std::string(op->name());
  HONE_INVALID_ARGUMENT("unknown op '" + std::string(name) + "' for backend " + backend_name +
                        " (available: " + (known.empty() ? "none" : known) + ")");
}

Numerics parse_numerics(const std::string &text, std::string_view option) {
  for (Numerics n : {Numerics::batch_invariant, Numerics::tolerance})
    if (text == to_string(n))
      return n;
  HONE_INVALID_ARGUMENT(std::string(option) + " '" + text +
                        "': expected batch_invariant or tolerance");
}

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

void require_writable(const std::string &path, std::string_view option) {
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    HONE_INVALID_ARGUMENT(std::string(option) + ": cannot write '" + path +
                          "': " + std::strerror(errno));
  ::close(fd);
  if (!existed)
    ::unlink(path.c_str());
}

} // namespace hone::cli

// Errors in two tiers (see docs/architecture.md):
//  - expected outcomes (a tactic that cannot implement a shape, fails the gate) are values:
//    hone::Status plus a reason string;
//  - bugs, broken environments and bad user input throw hone::Error, which carries the
//    source location and a kind that `main` maps to an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace hone {

enum class ErrorKind {
  invalid_argument, // bad user input: shape, op name, file contents (exit code 2)
  runtime,          // broken environment: a failing system or CUDA call (exit code 1)
};

class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string &message, const char *file, int line);
  ErrorKind kind() const noexcept { return kind_; }

private:
  ErrorKind kind_;
};

namespace detail {
[[noreturn]] void throw_error(ErrorKind kind, const std::string &message, const char *file,
                              int line);
} // namespace detail

} // namespace hone

// Throws hone::Error(invalid_argument) naming the bad value; use for user input.
#define HONE_INVALID_ARGUMENT(msg)                                                                 \
  ::hone::detail::throw_error(::hone::ErrorKind::invalid_argument, (msg), __FILE__, __LINE__)

// Throws hone::Error(runtime); use for failing system calls and broken invariants.
#define HONE_RUNTIME_ERROR(msg)                                                                    \
  ::hone::detail::throw_error(::hone::ErrorKind::runtime, (msg), __FILE__, __LINE__)

#define HONE_CHECK(cond, msg)                                                                      \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      HONE_RUNTIME_ERROR(std::string("check failed: " #cond ": ") + (msg));                        \
  } while (0)

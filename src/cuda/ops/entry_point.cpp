#include "cuda/ops/entry_point.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "hone/error.h"

namespace hone::cuda {

void require_aligned(std::string_view op,
                     std::initializer_list<std::pair<std::string_view, const void *>> pointers,
                     size_t alignment) {
  for (const auto &[name, p] : pointers) {
    if (p == nullptr)
      HONE_INVALID_ARGUMENT(std::string(op) + ": " + std::string(name) + " is null");
    if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
      char address[32];
      std::snprintf(address, sizeof address, "%p", p);
      HONE_INVALID_ARGUMENT(std::string(op) + ": " + std::string(name) + " (" + address +
                            ") is not " + std::to_string(alignment) + "-byte aligned");
    }
  }
}

void check_launch(std::string_view op, const Resolution &resolution, LaunchStatus status) {
  if (!status.ok())
    HONE_RUNTIME_ERROR(std::string(op) + " launch (" + resolution.tactic.str() +
                       "): " + status.message());
}

} // namespace hone::cuda

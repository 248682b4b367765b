// HONE_TEST_PATHS: which kernel paths the GEMV-family kernel tests and harnesses check and time.
#pragma once

#include <cstdlib>
#include <string>

#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda::testing {

// HONE_TEST_PATHS (a comma-separated list of kernel paths: fma, mma, stream, grouped, ring)
// restricts the configs a kernel test checks and times to those paths (the default and the
// references still run); unset or empty, every path. For compute-sanitizer runs of one path and
// focused timing tables.
inline bool path_selected(KernelPath path) {
  const char *v = std::getenv("HONE_TEST_PATHS");
  if (!v || !*v)
    return true;
  const std::string list = "," + std::string(v) + ",";
  return list.find("," + std::string(to_string(path)) + ",") != std::string::npos;
}

} // namespace hone::cuda::testing

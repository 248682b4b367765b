#include "cuda/kernels/common/kernel_types.h"

#include <cuda_runtime.h>

namespace hone::cuda {

LaunchStatus LaunchStatus::invalid_value() {
  return from_cuda(static_cast<int>(cudaErrorInvalidValue));
}

LaunchStatus LaunchStatus::invalid_configuration() {
  return from_cuda(static_cast<int>(cudaErrorInvalidConfiguration));
}

std::string LaunchStatus::message() const {
  const auto err = static_cast<cudaError_t>(code_);
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

const char *to_string(KernelPath path) {
  switch (path) {
  case KernelPath::fma:
    return "fma";
  case KernelPath::mma:
    return "mma";
  case KernelPath::stream:
    return "stream";
  }
  return "?";
}

} // namespace hone::cuda

#include "cuda/kernels/common/kernel_types.h"

#include <map>
#include <mutex>

#include <cuda_runtime.h>

namespace hone::cuda {

size_t shared_memory_opt_in(const void *kernel) {
  static std::mutex mutex;
  static std::map<const void *, size_t> limits;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = limits.find(kernel); it != limits.end())
    return it->second;
  size_t limit = 0;
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) ==
          cudaSuccess)
    limit = static_cast<size_t>(optin);
  else
    (void)cudaGetLastError();
  limits.emplace(kernel, limit);
  return limit;
}

bool pdl_supported() {
  static const bool supported = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return major >= 9;
  }();
  return supported;
}

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
  case KernelPath::grouped:
    return "grouped";
  }
  return "?";
}

} // namespace hone::cuda

#include "cuda/kernels/common/weight_stream.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <cuda_runtime.h>

namespace hone::cuda {

namespace {

// The device's opt-in dynamic shared-memory limit, set on `fn` once, at its first launch.
size_t opt_in_limit(const void *fn) {
  static std::mutex mutex;
  static std::map<const void *, size_t> limits;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = limits.find(fn); it != limits.end())
    return it->second;
  size_t limit = 0;
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) == cudaSuccess)
    limit = static_cast<size_t>(optin);
  else
    (void)cudaGetLastError();
  limits.emplace(fn, limit);
  return limit;
}

} // namespace

int persistent_ctas(const void *kernel, int threads, size_t shared_bytes, int tiles,
                    int ctas_per_sm) {
  int device = 0, sms = 0, resident = 0;
  if (shared_bytes > opt_in_limit(kernel))
    return 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads, shared_bytes) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  resident = std::min(resident, std::max(1, ctas_per_sm));
  if (resident < 1)
    return 0;
  return std::max(1, std::min(tiles, sms * resident));
}

LaunchStatus launch_persistent(const void *kernel, int ctas, int threads, size_t shared_bytes,
                               void *params, void *stream, bool dependent) {
  if (ctas < 1 || threads < 1)
    return LaunchStatus::invalid_value();
  if (shared_bytes > opt_in_limit(kernel))
    return LaunchStatus::invalid_configuration();
  cudaLaunchConfig_t launch{};
  launch.gridDim = dim3(static_cast<unsigned>(ctas));
  launch.blockDim = dim3(static_cast<unsigned>(threads));
  launch.dynamicSmemBytes = shared_bytes;
  launch.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attribute{};
  if (dependent) {
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    launch.attrs = &attribute;
    launch.numAttrs = 1;
  }
  void *args[] = {params};
  const cudaError_t status = cudaLaunchKernelExC(&launch, kernel, args);
  if (status != cudaSuccess)
    return LaunchStatus::from_cuda(static_cast<int>(status));
  return LaunchStatus::from_cuda(static_cast<int>(cudaGetLastError()));
}

} // namespace hone::cuda

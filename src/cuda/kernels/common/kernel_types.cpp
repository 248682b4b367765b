#include "cuda/kernels/common/kernel_types.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <cuda_runtime.h>

namespace hone::cuda {

size_t shared_memory_opt_in(const void *kernel) {
  // The attribute is set per device: the answer is remembered per (device, kernel).
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  static std::mutex mutex;
  static std::map<std::pair<int, const void *>, size_t> limits;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = limits.find({device, kernel}); it != limits.end())
    return it->second;
  size_t limit = 0;
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) ==
          cudaSuccess)
    limit = static_cast<size_t>(optin);
  else
    (void)cudaGetLastError();
  limits.emplace(std::pair{device, kernel}, limit);
  return limit;
}

bool kernel_spill_free(const void *kernel) {
  static std::mutex mutex;
  static std::map<const void *, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(kernel); it != known.end())
    return it->second;
  cudaFuncAttributes attr{};
  const bool ok = cudaFuncGetAttributes(&attr, kernel) == cudaSuccess;
  if (!ok)
    (void)cudaGetLastError();
  return known.emplace(kernel, ok && attr.localSizeBytes == 0).first->second;
}

namespace {

bool device_runs_pdl(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major >= 9;
}

// The current device's answer to `query(device)`, remembered per device ordinal in `known`
// (0: not asked yet). `query` returns the answer, never 0, or 0 when it could not be read, which
// is returned and not remembered. Two threads asking at once store the same answer, so relaxed
// atomics suffice; after the first call it is cudaGetDevice and one load. 0 when there is no
// current device.
template <class T, size_t N, class Query>
T per_device(std::array<std::atomic<T>, N> &known, Query query) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (device < 0 || static_cast<size_t>(device) >= N)
    return query(device);
  T answer = known[static_cast<size_t>(device)].load(std::memory_order_relaxed);
  if (answer == 0) {
    answer = query(device);
    if (answer != 0)
      known[static_cast<size_t>(device)].store(answer, std::memory_order_relaxed);
  }
  return answer;
}

} // namespace

bool pdl_supported() {
  // 1 no, 2 yes.
  static std::array<std::atomic<int8_t>, 64> answers{};
  return per_device(answers,
                    [](int device) -> int8_t { return device_runs_pdl(device) ? 2 : 1; }) == 2;
}

int current_device_sms() {
  static std::array<std::atomic<int>, 64> known{};
  return per_device(known, [](int device) {
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return sms;
  });
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
  case KernelPath::ring:
    return "ring";
  }
  return "?";
}

} // namespace hone::cuda

// Types every CUDA kernel family shares, with no CUDA header needed by includers: the status a
// launcher returns, a compiled kernel's resources, and the kernel path of the GEMV family.
//
//   LaunchStatus s = qmv_affine_launch(config, args, stream);
//   if (!s.ok()) HONE_RUNTIME_ERROR("qmv.affine: " + s.message());
#pragma once

#include <cstddef>
#include <string>

#include "hone/ops/cuda.h"

namespace hone::cuda {

// The outcome of enqueuing one kernel: a cudaError_t, kept as a number so that a header with
// no CUDA include can return it. Launchers never synchronise, so ok() says the launch was
// accepted, not that the kernel finished.
class LaunchStatus {
public:
  LaunchStatus() = default; // ok
  // REQUIRES: `cuda_error` is a cudaError_t value.
  static LaunchStatus from_cuda(int cuda_error) {
    LaunchStatus s;
    s.code_ = cuda_error;
    return s;
  }
  // cudaErrorInvalidValue: the launcher refused its arguments before any CUDA call.
  static LaunchStatus invalid_value();
  // cudaErrorInvalidConfiguration: the config needs more than the device gives (shared memory).
  static LaunchStatus invalid_configuration();
  bool ok() const { return code_ == 0; }
  int code() const { return code_; }
  // "cudaErrorName: description". Also clears the CUDA runtime's last error, so that the next
  // call does not report this one again.
  std::string message() const;

private:
  int code_ = 0;
};

// Whether the current device runs programmatic dependent launches (sm_90 and newer);
// remembered per device. Launchers ask it before they set the launch attribute.
bool pdl_supported();

// The current device's streaming multiprocessors, remembered per device; 0 when it cannot be
// read.
int current_device_sms();

// The current device's opt-in limit of dynamic shared memory per block, set on `kernel` (a
// __global__ function) at its first call on that device and remembered per device and kernel;
// 0 when it cannot be set.
size_t shared_memory_opt_in(const void *kernel);

// Whether `kernel` (a __global__ function) keeps every value in registers: no local memory
// (cudaFuncGetAttributes), the spill rule. Read at its first call and remembered per kernel;
// false when the query fails.
bool kernel_spill_free(const void *kernel);

// How a kernel is launched as one link of a chain of kernels on a stream (a decode step): the
// public ops::cuda::ChainLaunch (hone/ops/cuda.h), one struct for the API and the kernels' args.
using ChainLink = ops::cuda::ChainLaunch;

// What cudaFuncGetAttributes reports of a compiled kernel, plus the dynamic shared memory a
// config asks for.
struct KernelResources {
  int registers = 0;       // per thread
  size_t local_bytes = 0;  // spills and local arrays, per thread
  size_t shared_bytes = 0; // static + dynamic, per CTA
  int max_threads = 0;     // per CTA
};

// The arithmetic path of a GEMV-family kernel. The numeric values are the tactic spelling's
// (`gemv.bf16.fma` = 0, `gemv.bf16.mma` = 1, `gemv.bf16.stream` = 2) and part of the K
// summation order. stream: the weights-once kernels (a persistent grid whose producer warp
// streams the weights through shared memory; mma.sync consumers). ring: qmv.affine's weights-once
// kernels that keep the mma path's summation order.
enum class KernelPath { fma = 0, mma = 1, stream = 2, grouped = 3, ring = 4 };
const char *to_string(KernelPath path); // "fma", "mma", "stream", "grouped", "ring"

} // namespace hone::cuda

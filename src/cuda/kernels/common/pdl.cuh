// Programmatic dependent launch (PDL), shared by the kernels of a decode step: the device side
// (griddepcontrol) and the host launch with cudaLaunchAttributeProgrammaticStreamSerialization.
// Device code and launchers only; included by the kernels' .cu files.
//
// A kernel launched with `dependent` may start while the kernel before it on the stream is
// still running. It loads what the previous kernel does not write (weights, the step's page
// table and positions, uploaded before the step's first kernel), then pdl_wait() before it
// reads an activation, and pdl_launch_dependents() once its own activation reads are issued, so
// that the next kernel's CTAs may become resident. pdl_wait() returns once every kernel this
// one depends on has completed and its writes are visible; without a dependent launch both are
// no-ops, so a kernel is correct either way.
//
//   __global__ void k(Params p) { w = load(p.w); pdl_wait(); x = load(p.x);
//                                 pdl_launch_dependents(); store(p.y, f(x, w)); }
//   launch_maybe_dependent(k, grid, block, 0, stream, dependent, params);
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernels/common/chain_settings.h"
#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda::kernel_detail {

// griddepcontrol needs sm_90; on older targets both compile to nothing (no dependent launch
// is made there: pdl_supported(), kernel_types.h, is false). The memory clobbers keep the compiler
// from moving loads of activations above the wait or stores below it.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Enqueues kernel<<<grid, block, smem, stream>>>(params), with programmatic stream
// serialization when `dependent` (ignored where the device has no PDL).
template <class Params>
LaunchStatus launch_maybe_dependent(void (*kernel)(Params), dim3 grid, dim3 block, size_t smem,
                                    void *stream, bool dependent, const Params &params) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attributes[2]{};
  if (dependent && hone::cuda::pdl_supported()) {
    attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attributes;
    config.numAttrs = hone::cuda::add_chain_carveout(attributes, 1);
  }
  Params copy = params;
  void *args[] = {&copy};
  const cudaError_t status =
      cudaLaunchKernelExC(&config, reinterpret_cast<const void *>(kernel), args);
  return LaunchStatus::from_cuda(
      static_cast<int>(status != cudaSuccess ? status : cudaGetLastError()));
}

// Registers and local memory of `kernel` (cudaFuncGetAttributes); empty when the query fails.
template <class Params> KernelResources resources_of(void (*kernel)(Params)) {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, reinterpret_cast<const void *>(kernel)) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  KernelResources r;
  r.registers = attr.numRegs;
  r.local_bytes = attr.localSizeBytes;
  r.shared_bytes = attr.sharedSizeBytes;
  r.max_threads = attr.maxThreadsPerBlock;
  return r;
}

} // namespace hone::cuda::kernel_detail

// Checked CUDA and cuBLASLt calls for the CUDA backend. Every runtime call goes through
// HONE_CUDA_CHECK, which throws hone::Error(runtime) naming the call text, the CUDA error
// and the source location.
//
//   HONE_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, stream));
//   HONE_CUBLAS_CHECK(cublasLtCreate(&handle));
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace hone::cuda::detail {

// Throws hone::Error(runtime) "<call>: <error name>: <error string> [file:line]" unless
// `status` is cudaSuccess. Clears the runtime's last-error state first.
void check_cuda(cudaError_t status, const char *call, const char *file, int line);
void check_cublas(cublasStatus_t status, const char *call, const char *file, int line);

} // namespace hone::cuda::detail

#define HONE_CUDA_CHECK(call) ::hone::cuda::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define HONE_CUBLAS_CHECK(call)                                                                    \
  ::hone::cuda::detail::check_cublas((call), #call, __FILE__, __LINE__)

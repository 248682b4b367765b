#include "cuda/backend/cuda_check.h"

#include <string>

#include "hone/error.h"

namespace hone::cuda::detail {

void check_cuda(cudaError_t status, const char *call, const char *file, int line) {
  if (status == cudaSuccess)
    return;
  // A non-sticky error stays in the runtime's last-error slot; clear it so that later,
  // unrelated checks do not report it again.
  (void)cudaGetLastError();
  ::hone::detail::throw_error(ErrorKind::runtime,
                              std::string(call) + ": " + cudaGetErrorName(status) + ": " +
                                  cudaGetErrorString(status),
                              file, line);
}

void check_cublas(cublasStatus_t status, const char *call, const char *file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  ::hone::detail::throw_error(ErrorKind::runtime,
                              std::string(call) + ": " + cublasLtGetStatusName(status) + ": " +
                                  cublasLtGetStatusString(status),
                              file, line);
}

} // namespace hone::cuda::detail

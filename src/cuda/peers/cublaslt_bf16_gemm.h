// CublasLtBf16Gemm: one planned cuBLASLt BF16 GEMM (fp32 compute, bf16 out) computing
// Y [rows, n] = X [rows, k] . W [n, k]^T on row-major device buffers passed per call. The
// peers of gemv.bf16 ("cublas") and qmv.affine ("cublas.dequant") both run on it, so the
// two ops are held to the same cuBLASLt configuration.
//
//   hone::cuda::CublasLtBf16Gemm gemm(rows, n, k);   // handle, layouts, heuristic algorithm
//   gemm.run(x, w, y, stream);                       // enqueued, not synchronised
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/backend/device_buffer.h"

namespace hone::cuda {

class CublasLtBf16Gemm {
public:
  // Throws Error(invalid_argument) for a non-positive dimension and Error(runtime) when
  // cuBLASLt offers no algorithm for the problem.
  CublasLtBf16Gemm(int rows, int n, int k);
  CublasLtBf16Gemm(const CublasLtBf16Gemm &) = delete;
  CublasLtBf16Gemm &operator=(const CublasLtBf16Gemm &) = delete;

  // x: bf16 [rows, k], w: bf16 [n, k], y: bf16 [rows, n], row-major device memory.
  // Enqueues one cublasLtMatmul on `stream`; throws Error(runtime) when it fails to enqueue.
  void run(const void *x, const void *w, void *y, cudaStream_t stream);

  int rows() const { return rows_; }
  int n() const { return n_; }
  int k() const { return k_; }

private:
  // The cuBLASLt objects, destroyed in reverse order of creation; a member of its own so
  // that a constructor which throws half-way still releases what it created.
  struct Handles {
    cublasLtHandle_t handle = nullptr;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr; // W
    cublasLtMatrixLayout_t b = nullptr; // X
    cublasLtMatrixLayout_t c = nullptr; // Y (also D)
    cublasLtMatmulPreference_t preference = nullptr;
    Handles() = default;
    ~Handles();
    Handles(const Handles &) = delete;
    Handles &operator=(const Handles &) = delete;
  };

  int rows_, n_, k_;
  DeviceBuffer workspace_;
  Handles h_;
  cublasLtMatmulAlgo_t algo_{};
};

} // namespace hone::cuda

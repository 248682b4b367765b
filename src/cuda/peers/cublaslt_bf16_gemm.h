// CublasLtBf16Gemm: one planned cuBLASLt BF16 GEMM (fp32 compute, bf16 out) computing
// Y [rows, n] = X [rows, k] . W [n, k]^T on row-major device buffers passed per call. The
// peers of gemv.bf16 ("cublas") and qmv.affine ("cublas.dequant") both run on it, so the
// two ops are held to the same cuBLASLt configuration; gemv.bf16's vendor tactics
// (`gemv.bf16.cublaslt:...`) run on it too, one algorithm of the heuristic's list each.
//
//   hone::cuda::CublasLtBf16Gemm gemm(rows, n, k);   // handle, layouts, heuristic algorithm
//   gemm.run(x, w, y, stream);                       // enqueued, not synchronised
//   for (auto id : CublasLtBf16Gemm::heuristic(rows, n, k, 4)) CublasLtBf16Gemm g(rows, n, k, id);
#pragma once

#include <cstddef>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/backend/device_buffer.h"
#include "cuda/peers/cublaslt_algo_id.h"

namespace hone::cuda {

// [bytes] the workspace offered to cuBLASLt's heuristic (its recommendation for Hopper), by the
// peers and by gemv.bf16's vendor tactics alike, so both see the same algorithms.
inline constexpr size_t kCublasLtWorkspaceBytes = size_t{32} << 20;

// The identity of `algo` (its configuration attributes); an attribute this cuBLASLt does not
// report reads as 0.
CublasLtAlgoId cublaslt_algo_id(const cublasLtMatmulAlgo_t &algo);

class CublasLtBf16Gemm {
public:
  // The heuristic's first algorithm, with a workspace of kCublasLtWorkspaceBytes of its own
  // (the peers). Throws Error(invalid_argument) for a non-positive dimension and
  // Error(runtime) when cuBLASLt offers no algorithm for the problem.
  CublasLtBf16Gemm(int rows, int n, int k);
  // The algorithm `algo`, without a workspace of its own (enqueue() takes one): taken from
  // the heuristic's list for this problem when it is there, else rebuilt from its attributes
  // (cublasLtMatmulAlgoInit) and accepted only when cublasLtMatmulAlgoCheck passes and it
  // reads back as `algo`. Throws Error(invalid_argument) naming the algorithm and the problem
  // when this cuBLASLt cannot run it (another cuBLASLt version, another device), and
  // Error(runtime) when a cuBLASLt object cannot be created.
  CublasLtBf16Gemm(int rows, int n, int k, const CublasLtAlgoId &algo);
  CublasLtBf16Gemm(const CublasLtBf16Gemm &) = delete;
  CublasLtBf16Gemm &operator=(const CublasLtBf16Gemm &) = delete;

  // The identities of the heuristic's first `count` algorithms for the problem (at most
  // kCublasLtWorkspaceBytes of workspace), best first, each once. Throws as the constructors.
  static std::vector<CublasLtAlgoId> heuristic(int rows, int n, int k, int count);

  // x: bf16 [rows, k], w: bf16 [n, k], y: bf16 [rows, n], row-major device memory.
  // Enqueues one cublasLtMatmul on `stream`; throws Error(runtime) when it fails to enqueue.
  // REQUIRES: constructed with its own workspace (the heuristic constructor).
  void run(const void *x, const void *w, void *y, cudaStream_t stream);
  // The same on `workspace` of `workspace_bytes` (>= workspace_bytes(); may be null when that
  // is 0). Returns cuBLASLt's status; never throws.
  cublasStatus_t enqueue(const void *x, const void *w, void *y, void *workspace,
                         size_t workspace_bytes, cudaStream_t stream) const noexcept;

  int rows() const { return rows_; }
  int n() const { return n_; }
  int k() const { return k_; }
  const CublasLtAlgoId &algo_id() const { return algo_id_; }
  // [bytes] of workspace the algorithm needs.
  size_t workspace_bytes() const { return algo_workspace_bytes_; }

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

  // Handles, layouts and preference only, no algorithm (heuristic()).
  struct Unplanned {};
  CublasLtBf16Gemm(int rows, int n, int k, Unplanned);
  // Validates the dimensions and creates the handle, descriptor, layouts and preference.
  void create(int rows, int n, int k);
  // The heuristic's first `count` results for the problem whose state is success.
  std::vector<cublasLtMatmulHeuristicResult_t> heuristic_results(int count) const;

  int rows_, n_, k_;
  DeviceBuffer workspace_; // own workspace (heuristic constructor only)
  Handles h_;
  cublasLtMatmulAlgo_t algo_{};
  CublasLtAlgoId algo_id_;
  size_t algo_workspace_bytes_ = 0;
};

} // namespace hone::cuda

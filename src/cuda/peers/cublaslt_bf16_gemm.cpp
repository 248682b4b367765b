#include "cuda/peers/cublaslt_bf16_gemm.h"

#include <string>

#include "cuda/backend/cuda_check.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

// [bytes] workspace offered to the heuristic (cuBLASLt's recommendation for Hopper).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

} // namespace

CublasLtBf16Gemm::CublasLtBf16Gemm(int rows, int n, int k)
    : rows_(rows), n_(n), k_(k), workspace_(kCublasWorkspaceBytes) {
  if (rows < 1 || n < 1 || k < 1)
    HONE_INVALID_ARGUMENT(
        "cuBLASLt BF16 GEMM needs positive dimensions, got rows=" + std::to_string(rows) +
        ",n=" + std::to_string(n) + ",k=" + std::to_string(k));
  HONE_CUBLAS_CHECK(cublasLtCreate(&h_.handle));
  // Column-major view: Y^T [n, rows] = W [n, k] . X^T [k, rows], where row-major W [n, k]
  // is column-major [k, n] (ld k, transposed: op(A) = A^T) and row-major X [rows, k] is
  // column-major [k, rows] (ld k, not transposed); Y [rows, n] row-major is column-major
  // [n, rows] with ld n.
  const auto m = static_cast<uint64_t>(n);
  const auto cols = static_cast<uint64_t>(rows);
  const auto depth = static_cast<uint64_t>(k);
  HONE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&h_.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T;
  const cublasOperation_t trans_b = CUBLAS_OP_N;
  HONE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h_.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                   sizeof trans_a));
  HONE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h_.desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                   sizeof trans_b));
  HONE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&h_.a, CUDA_R_16BF, depth, m, static_cast<int64_t>(depth)));
  HONE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&h_.b, CUDA_R_16BF, depth, cols, static_cast<int64_t>(depth)));
  HONE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&h_.c, CUDA_R_16BF, m, cols, static_cast<int64_t>(m)));

  HONE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&h_.preference));
  const size_t workspace_bytes = workspace_.size();
  HONE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h_.preference,
                                                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  HONE_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(h_.handle, h_.desc, h_.a, h_.b, h_.c, h_.c,
                                                   h_.preference, 1, &heuristic, &found));
  if (found < 1 || heuristic.state != CUBLAS_STATUS_SUCCESS)
    HONE_RUNTIME_ERROR("cuBLASLt has no BF16 algorithm for rows=" + std::to_string(rows) +
                       ",n=" + std::to_string(n) + ",k=" + std::to_string(k));
  algo_ = heuristic.algo;
}

CublasLtBf16Gemm::Handles::~Handles() {
  // NOTE: destructors do not throw; failures here leave nothing to recover.
  if (preference)
    (void)cublasLtMatmulPreferenceDestroy(preference);
  if (c)
    (void)cublasLtMatrixLayoutDestroy(c);
  if (b)
    (void)cublasLtMatrixLayoutDestroy(b);
  if (a)
    (void)cublasLtMatrixLayoutDestroy(a);
  if (desc)
    (void)cublasLtMatmulDescDestroy(desc);
  if (handle)
    (void)cublasLtDestroy(handle);
}

void CublasLtBf16Gemm::run(const void *x, const void *w, void *y, cudaStream_t stream) {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  HONE_CUBLAS_CHECK(cublasLtMatmul(h_.handle, h_.desc, &alpha, w, h_.a, x, h_.b, &beta, y, h_.c, y,
                                   h_.c, &algo_, workspace_.data(), workspace_.size(), stream));
}

} // namespace hone::cuda

#include "cuda/cublas_gemv_bf16_peer.h"

#include <string>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/gemv_bf16_op.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

// [bytes] workspace offered to the heuristic (cuBLASLt's recommendation for Hopper).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// Owns one cuBLASLt handle, the matmul description and its layouts; all destroyed in
// reverse order of creation.
class CublasLtGemvBf16Peer final : public Peer {
public:
  explicit CublasLtGemvBf16Peer(GemvBf16Workload &workload)
      : workload_(workload), workspace_(kCublasWorkspaceBytes) {
    HONE_CUBLAS_CHECK(cublasLtCreate(&handle_));
    // Column-major view: Y^T [n, rows] = W [n, k] . X^T [k, rows], where row-major W [n, k]
    // is column-major [k, n] (ld k, transposed: op(A) = A^T) and row-major X [rows, k] is
    // column-major [k, rows] (ld k, not transposed); Y [rows, n] row-major is column-major
    // [n, rows] with ld n.
    const auto m = static_cast<uint64_t>(workload.n());
    const auto n = static_cast<uint64_t>(workload.rows());
    const auto k = static_cast<uint64_t>(workload.k());
    HONE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_a = CUBLAS_OP_T;
    const cublasOperation_t trans_b = CUBLAS_OP_N;
    HONE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                     sizeof trans_a));
    HONE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                     sizeof trans_b));
    HONE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, k, m, static_cast<int64_t>(k)));
    HONE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, CUDA_R_16BF, k, n, static_cast<int64_t>(k)));
    HONE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, m, n, static_cast<int64_t>(m)));

    HONE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference_));
    const size_t workspace_bytes = workspace_.size();
    HONE_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    HONE_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, preference_, 1,
                                                     &heuristic, &found));
    if (found < 1 || heuristic.state != CUBLAS_STATUS_SUCCESS)
      HONE_RUNTIME_ERROR(
          "cuBLASLt has no BF16 algorithm for rows=" + std::to_string(workload.rows()) +
          ",n=" + std::to_string(workload.n()) + ",k=" + std::to_string(workload.k()));
    algo_ = heuristic.algo;
  }

  ~CublasLtGemvBf16Peer() override {
    // NOTE: destructors do not throw; failures here leave nothing to recover.
    if (preference_)
      (void)cublasLtMatmulPreferenceDestroy(preference_);
    if (c_)
      (void)cublasLtMatrixLayoutDestroy(c_);
    if (b_)
      (void)cublasLtMatrixLayoutDestroy(b_);
    if (a_)
      (void)cublasLtMatrixLayoutDestroy(a_);
    if (desc_)
      (void)cublasLtMatmulDescDestroy(desc_);
    if (handle_)
      (void)cublasLtDestroy(handle_);
  }
  CublasLtGemvBf16Peer(const CublasLtGemvBf16Peer &) = delete;
  CublasLtGemvBf16Peer &operator=(const CublasLtGemvBf16Peer &) = delete;

  std::string name() const override { return "cublas"; }

  void run(int copy) override {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    HONE_CUBLAS_CHECK(cublasLtMatmul(
        handle_, desc_, &alpha, workload_.w(copy), a_, workload_.x(copy), b_, &beta, workload_.y(),
        c_, workload_.y(), c_, &algo_, workspace_.data(), workspace_.size(), workload_.stream()));
  }

private:
  GemvBf16Workload &workload_;
  DeviceBuffer workspace_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr; // W
  cublasLtMatrixLayout_t b_ = nullptr; // X
  cublasLtMatrixLayout_t c_ = nullptr; // Y (also D)
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

} // namespace

std::unique_ptr<Peer> make_cublas_gemv_bf16_peer(Workload &workload) {
  auto *gemv = dynamic_cast<GemvBf16Workload *>(&workload);
  if (!gemv)
    HONE_INVALID_ARGUMENT("peer 'cublas' needs a gemv.bf16 (cuda) workload");
  return std::make_unique<CublasLtGemvBf16Peer>(*gemv);
}

} // namespace hone::cuda

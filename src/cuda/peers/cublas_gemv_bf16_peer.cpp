#include "cuda/peers/cublas_gemv_bf16_peer.h"

#include <string>

#include "cuda/peers/cublaslt_bf16_gemm.h"
#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/peers/workload_cast.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

// cuBLASLt on the workload's own X, W and Y of each rotation copy.
class CublasLtGemvBf16Peer final : public Peer {
public:
  explicit CublasLtGemvBf16Peer(GemvBf16Workload &workload)
      : workload_(workload), gemm_(workload.rows(), workload.n(), workload.k()) {}

  std::string name() const override { return "cublas"; }

  void run(int copy) override {
    gemm_.run(workload_.x(copy), workload_.w(copy), workload_.y(), workload_.stream());
  }

private:
  GemvBf16Workload &workload_;
  CublasLtBf16Gemm gemm_;
};

} // namespace

std::unique_ptr<Peer> make_cublas_gemv_bf16_peer(Workload &workload) {
  return std::make_unique<CublasLtGemvBf16Peer>(workload_as<GemvBf16Workload>(workload, "cublas", "gemv.bf16 (cuda)"));
}

} // namespace hone::cuda

#include "cuda/peers/cublas_dequant_affine_linear_peer.h"

#include <string>
#include <vector>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/ops/affine_dequantize.h"
#include "cuda/ops/affine_linear_workload.h"
#include "cuda/peers/cublaslt_bf16_gemm.h"
#include "cuda/peers/workload_cast.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

class CublasDequantAffineLinearPeer final : public Peer {
public:
  explicit CublasDequantAffineLinearPeer(AffineLinearWorkload &workload)
      : workload_(workload), gemm_(workload.rows(), workload.n(), workload.k()) {
    const size_t bytes =
        static_cast<size_t>(workload.n()) * static_cast<size_t>(workload.k()) * sizeof(uint16_t);
    for (int copy = 0; copy < workload.rotation(); ++copy) {
      w_.emplace_back(bytes);
      affine_dequantize_bf16(workload.q(copy), workload.scales(copy), workload.biases(copy),
                             w_.back().data(), workload.n(), workload.k(), workload.bits(),
                             workload.group(), workload.stream());
    }
    HONE_CUDA_CHECK(cudaStreamSynchronize(workload.stream()));
  }

  std::string name() const override { return "cublas.dequant"; }

  void run(int copy) override {
    HONE_CHECK(copy >= 0 && copy < static_cast<int>(w_.size()),
               "copy " + std::to_string(copy) + " outside the " + std::to_string(w_.size()) +
                   " copies dequantised when the peer was made");
    gemm_.run(workload_.x(copy), w_[static_cast<size_t>(copy)].data(), workload_.y(),
              workload_.stream());
  }

private:
  AffineLinearWorkload &workload_;
  CublasLtBf16Gemm gemm_;
  std::vector<DeviceBuffer> w_; // [copies] bf16 [n, k], dequantised from the workload's copy
};

} // namespace

std::unique_ptr<Peer> make_cublas_dequant_affine_linear_peer(Workload &workload) {
  return std::make_unique<CublasDequantAffineLinearPeer>(workload_as<AffineLinearWorkload>(
      workload, "cublas.dequant", "qmv.affine, qmm.affine or quantized_linear (cuda)"));
}

} // namespace hone::cuda

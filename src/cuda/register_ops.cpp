#include <memory>

#include "cuda/cublas_dequant_qmv_affine_peer.h"
#include "cuda/cublas_gemv_bf16_peer.h"
#include "cuda/cuda_backend.h"
#include "cuda/gemv_bf16_op.h"
#include "cuda/qmv_affine_op.h"
#include "hone/registry.h"

namespace hone::cuda {

// NOTE: runs when the registry is first used, also on machines without a GPU; nothing here
// may touch the device (ops and peer factories only reach it through prepare()).
void register_ops(Registry &registry) {
  auto gemv = std::make_unique<GemvBf16Op>();
  const TunableOp &gemv_op = *gemv;
  registry.add(std::move(gemv));
  registry.add_peer(gemv_op, "cublas", [](Workload &w) { return make_cublas_gemv_bf16_peer(w); });

  auto qmv = std::make_unique<QmvAffineOp>();
  const TunableOp &qmv_op = *qmv;
  registry.add(std::move(qmv));
  // A representation change (bf16 weights), named as such: never reported as a speedup.
  registry.add_peer(qmv_op, "cublas.dequant",
                    [](Workload &w) { return make_cublas_dequant_qmv_affine_peer(w); });
}

} // namespace hone::cuda

#include <memory>

#include "cuda/cublas_gemv_bf16_peer.h"
#include "cuda/cuda_backend.h"
#include "cuda/gemv_bf16_op.h"
#include "hone/registry.h"

namespace hone::cuda {

// NOTE: runs when the registry is first used, also on machines without a GPU; nothing here
// may touch the device (ops and peer factories only reach it through prepare()).
void register_ops(Registry &registry) {
  auto gemv = std::make_unique<GemvBf16Op>();
  const TunableOp &op = *gemv;
  registry.add(std::move(gemv));
  registry.add_peer(op, "cublas", [](Workload &w) { return make_cublas_gemv_bf16_peer(w); });
}

} // namespace hone::cuda

#include <memory>

#include "cuda/peers/cublas_dequant_affine_linear_peer.h"
#include "cuda/peers/cublas_gemv_bf16_peer.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/ops/decode_paged_op.h"
#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/ops/kv_append_op.h"
#include "cuda/kernels/qmm_affine/qmm_affine.h"
#include "cuda/ops/qmm_affine_op.h"
#include "cuda/ops/qmv_affine_op.h"
#include "cuda/ops/quantized_linear_op.h"
#include "cuda/ops/rmsnorm_op.h"
#include "cuda/ops/rope_op.h"
#include "cuda/ops/silu_mul_op.h"
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
                    [](Workload &w) { return make_cublas_dequant_affine_linear_peer(w); });
  // The decode step's gate/up linear with SiLU x up fused, tuned as the step launches it.
  registry.add(std::make_unique<QmvAffineSiluMulOp>());

  // No C++ peer: PyTorch SDPA on contiguous KV is timed by bench/peers/decode_paged_torch.py.
  registry.add(std::make_unique<DecodePagedOp>());

  // The small ops of a decode step (no matched peer).
  registry.add(std::make_unique<RmsnormOp>());
  registry.add(std::make_unique<RopeOp>());
  registry.add(std::make_unique<KvAppendOp>());
  registry.add(std::make_unique<SiluMulOp>());

  // qmm.affine and quantized_linear only where the build has qmm kernels (CUTLASS found at
  // configure time). Peer: cuBLASLt BF16 dense on the dequantised weights, a representation
  // change like qmv.affine's; PyTorch's int4 kernel is bench/peers/qmm_affine_torch.py.
  if (qmm_affine_built()) {
    auto qmm = std::make_unique<QmmAffineOp>();
    const TunableOp &qmm_op = *qmm;
    registry.add(std::move(qmm));
    registry.add_peer(qmm_op, "cublas.dequant",
                      [](Workload &w) { return make_cublas_dequant_affine_linear_peer(w); });
    auto linear = std::make_unique<QuantizedLinearOp>();
    const TunableOp &linear_op = *linear;
    registry.add(std::move(linear));
    registry.add_peer(linear_op, "cublas.dequant",
                      [](Workload &w) { return make_cublas_dequant_affine_linear_peer(w); });
  }
}

} // namespace hone::cuda

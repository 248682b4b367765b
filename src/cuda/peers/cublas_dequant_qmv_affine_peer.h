// The "cublas.dequant" peer of qmv.affine: cuBLASLt BF16 GEMM (fp32 compute, bf16 out) on
// the weights dequantised to bf16 once, up front. It is a representation change, not a
// matched peer: it reads 2 bytes per weight where qmv.affine reads bits / 8 plus the group
// parameters, so its time is reported apart and never as hone's speedup. It shows what the
// quantized format buys over running the same weights in bf16.
//
//   auto w = op.prepare(shape);
//   w->set_rotation(copies);
//   auto peer = hone::cuda::make_cublas_dequant_qmv_affine_peer(*w);  // dequantises each copy
//   peer->run(/*copy=*/0);   // enqueued on the backend stream
#pragma once

#include <memory>

#include "hone/registry.h"

namespace hone::cuda {

// Dequantises every rotation copy the workload has at this call into its own bf16 W [n, k]
// (the dequantisation is outside any timed region); run(copy) then reads the workload's X of
// that copy and writes its Y. A later check() that redraws the workload's copy 0 leaves the
// peer on the weights of the earlier draw: same shape and statistics, so timing is
// unaffected (peers are not gated); make the peer again to compare outputs.
// Throws Error(invalid_argument) when `workload` is not a qmv.affine (cuda) workload,
// Error(runtime) when cuBLASLt offers no algorithm or the weights do not fit in memory.
std::unique_ptr<Peer> make_cublas_dequant_qmv_affine_peer(Workload &workload);

} // namespace hone::cuda

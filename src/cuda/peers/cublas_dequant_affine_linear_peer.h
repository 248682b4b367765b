// The "cublas.dequant" peer of qmv.affine, qmm.affine and quantized_linear (every op on an
// AffineLinearWorkload): cuBLASLt BF16 dense GEMM
// (fp32 compute, bf16 out) on the same M, N, K, over the weights dequantised to bf16 once, up
// front. A representation change, not a matched peer: it reads 2 bytes per weight where hone
// reads bits / 8 plus the group parameters, so its time is reported apart, in multiplier units,
// never as a speedup of hone. It is the bar the quantized GEMM must beat where the weights'
// bytes bound the time and approach where the tensor cores do.
//
//   auto w = op.prepare(shape);            // a qmv.affine, qmm.affine or quantized_linear workload
//   w->set_rotation(copies);
//   auto peer = hone::cuda::make_cublas_dequant_affine_linear_peer(*w);  // dequantises
//   peer->run(/*copy=*/0);                 // enqueued on the backend stream
#pragma once

#include <memory>

#include "hone/registry.h"

namespace hone::cuda {

// Dequantises every rotation copy the workload has at this call into its own bf16 W [n, k]
// (outside any timed region); run(copy) then reads the workload's X of that copy and writes
// its Y. A later check() that redraws copy 0 leaves the peer on the earlier draw's weights:
// same shape and statistics, so timing is unaffected (peers are not gated).
// Throws Error(invalid_argument) when `workload` is not an affine linear (qmv.affine, qmm.affine,
// quantized_linear; cuda) workload, Error(runtime) when cuBLASLt offers no algorithm or memory runs
// out.
std::unique_ptr<Peer> make_cublas_dequant_affine_linear_peer(Workload &workload);

} // namespace hone::cuda

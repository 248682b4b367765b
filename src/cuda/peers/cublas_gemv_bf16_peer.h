// The cuBLASLt peer of gemv.bf16: a BF16 GEMM (fp32 compute, bf16 out) producing the same
// Y [rows, n] from the same workload buffers and rotation copies, so hone's pick and
// cuBLASLt are timed in the same run on the same weights. The GEMM itself is
// CublasLtBf16Gemm (cublaslt_bf16_gemm.h), shared with qmv.affine's "cublas.dequant" peer.
//
//   auto w = op.prepare(shape);
//   auto peer = hone::cuda::make_cublas_gemv_bf16_peer(*w);
//   peer->run(/*copy=*/0);   // enqueued on the backend stream
#pragma once

#include <memory>

#include "hone/registry.h"

namespace hone::cuda {

// Throws Error(invalid_argument) when `workload` is not a gemv.bf16 (cuda) workload, and
// Error(runtime) when cuBLASLt offers no algorithm for the problem.
std::unique_ptr<Peer> make_cublas_gemv_bf16_peer(Workload &workload);

} // namespace hone::cuda

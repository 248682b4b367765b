// Affine dequantization on the device: the bf16 weight matrix a quantized one stands for,
// for peers that run on plain bf16 weights (cuBLASLt on the dequantised qmv.affine weights).
//
//   affine_dequantize_bf16(q, scales, biases, w, n, k, bits, group, stream);
//   // w: bf16 [n, k], W[j, i] = bf16(q[j, i] * scale[j, i / group] + bias[j, i / group])
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace hone::cuda {

// W [n, k] bf16 from the qmv.affine layout (q uint32 [n, k * bits / 32], values along K
// lowest bits first; scales, biases bf16 [n, k / group]). Each weight is q * scale + bias in
// fp32 (one fused multiply-add), rounded once to bf16 (nearest, ties to even).
// REQUIRES: bits in {4, 8}; group in {32, 64, 128}; k % group == 0; q and w 16-byte aligned.
// Throws Error(invalid_argument) naming a bad n, k, bits or group. Enqueued on `stream`,
// not synchronised.
void affine_dequantize_bf16(const uint32_t *q, const void *scales, const void *biases, void *w,
                            int n, int k, int bits, int group, cudaStream_t stream);

} // namespace hone::cuda

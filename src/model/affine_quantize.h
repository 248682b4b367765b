// Affine quantization on the device: the twin of hone::ops::cpu::quantize_affine (the quantizer
// of `hone quantize`) for bf16 weights already in device memory, bit for bit the same q, scales
// and biases, so that a checkpoint is quantized where it is loaded without a float32 copy on the
// host. Per group of `group` weights along k: scale = bf16((max - min) / (2^bits - 1)), bias =
// bf16(min), q = clamp(rint((w - bias) / scale), 0, 2^bits - 1) (0 where scale is 0), packed
// into the qmv.affine layout.
//
//   hone::model::quantize_affine_bf16(w, q, scales, biases, n, k, 4, 64, stream);
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace hone::model {

// w bf16 [n, k] -> q uint32 [n, k * bits / 32] (32 / bits values per word along k, lowest bits
// first), scales and biases bf16 [n, k / group]. REQUIRES: bits in {4, 8}; group in {32, 64,
// 128}; k % group == 0; finite weights (a NaN's group is undefined, as on the host).
// Throws Error(invalid_argument) naming a bad n, k, bits or group. Enqueued on `stream`, not
// synchronised.
void quantize_affine_bf16(const void *w, uint32_t *q, void *scales, void *biases, int64_t n,
                          int64_t k, int bits, int group, cudaStream_t stream);

} // namespace hone::model

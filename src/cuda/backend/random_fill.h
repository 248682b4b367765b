// Device-side random input generation for checks and rotation copies: a counter-based hash,
// so any (seed, index) gives the same value on every launch configuration.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace hone::cuda {

// A fresh seed per call: a per-process random base plus a counter, so that every check and
// every rotation copy draws new data. Thread-safe.
uint64_t next_random_seed();

// Writes `count` bf16 values uniform in [-1, 1) (never all zero) to `dst`, drawn from
// `seed`; enqueued on `stream`, not synchronised.
void fill_random_bf16(void *dst, size_t count, uint64_t seed, cudaStream_t stream);

// Writes `count` uniformly random uint32 words to `dst` (every bit pattern occurs: packed
// quantized weights, where any pattern is valid); enqueued on `stream`, not synchronised.
void fill_random_u32(void *dst, size_t count, uint64_t seed, cudaStream_t stream);

// Writes `count` (scale, bias) pairs of affine quantization, as bf16, shaped like those of
// real weights: each group spans a weight range r uniform in [0.015, 0.3) (scale = r / q_max,
// q_max = 2^bits - 1, so 1e-3..2e-2 at 4 bits) and is centred near zero (bias = -r / 2 x
// uniform [0.8, 1.2)), so that dequantised weights straddle zero as trained ones do.
// REQUIRES: bits in 1..8. Enqueued on `stream`, not synchronised.
void fill_random_affine_params(void *scales, void *biases, size_t count, int bits, uint64_t seed,
                               cudaStream_t stream);

} // namespace hone::cuda

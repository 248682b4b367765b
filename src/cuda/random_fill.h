// Device-side random input generation for checks and rotation copies: a counter-based hash,
// so any (seed, index) gives the same value on every launch configuration.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace hone::cuda {

// Writes `count` bf16 values uniform in [-1, 1) (never all zero) to `dst`, drawn from
// `seed`; enqueued on `stream`, not synchronised.
void fill_random_bf16(void *dst, size_t count, uint64_t seed, cudaStream_t stream);

} // namespace hone::cuda

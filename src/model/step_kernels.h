// The step's own small device helpers: seeded weight fills, the q/k/v bias add (Qwen2), a row
// gather (a prefill's last tokens) and a bit-exact comparison of two outputs. Enqueued on the
// caller's stream, never synchronised.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace hone::model {

// dst[i] = bf16(offset + scale * u), u uniform in [-1, 1) from (seed, i).
void fill_uniform_bf16(void *dst, size_t count, uint64_t seed, float scale, float offset,
                       cudaStream_t stream);
// y[r, j] = bf16(y[r, j] + bias[j]) for r < rows, j < width (bf16).
void add_bias_bf16(void *y, const void *bias, int64_t rows, int64_t width, cudaStream_t stream);
// dst[r, j] = src[r * src_rows_per_row + offset, j] for r < rows, j < width (bf16): one row of
// every group of src_rows_per_row rows (a prefill's last token of each request).
void gather_rows_bf16(void *dst, const void *src, int64_t rows, int64_t src_rows_per_row,
                      int64_t offset, int64_t width, cudaStream_t stream);
} // namespace hone::model

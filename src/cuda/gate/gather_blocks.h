// A device-side gather of strided blocks into a dense buffer: what the gate downloads when it
// needs scattered pieces of a large tensor (the pages of a few KV heads of a paged cache), so
// that one copy, not one per piece, crosses to the host.
//
//   gather_blocks(staging, cache, offsets_device, n, page_size, row_bytes, pitch, stream);
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace hone::cuda {

// Enqueues on `stream` (not synchronised) the gather of `count` blocks of `src` into `dst`,
// dense and in their order (count x block_rows x row_bytes): block i is `block_rows` rows of
// `row_bytes` bytes, `pitch` bytes apart, from src + offsets[i] bytes (offsets: device int64
// [count]). REQUIRES: dst, src, row_bytes, pitch and every offset multiples of 16 bytes.
void gather_blocks(void *dst, const void *src, const int64_t *offsets, size_t count,
                   size_t block_rows, size_t row_bytes, size_t pitch, cudaStream_t stream);

} // namespace hone::cuda

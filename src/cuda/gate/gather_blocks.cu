#include "cuda/gate/gather_blocks.h"

#include <algorithm>

#include "cuda/backend/cuda_check.h"

namespace hone::cuda {

namespace {

constexpr int kThreads = 256;

// One 16-byte unit a thread a step: unit i of the output is unit (i % row_units) of row
// ((i / row_units) % block_rows) of block i / (block_rows x row_units).
__global__ void gather_blocks_kernel(uint4 *dst, const unsigned char *src, const int64_t *offsets,
                                     size_t count, size_t block_rows, size_t row_units,
                                     size_t pitch) {
  const size_t block_units = block_rows * row_units, total = count * block_units;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const size_t block = i / block_units, in_block = i % block_units;
    const size_t row = in_block / row_units, unit = in_block % row_units;
    dst[i] =
        *reinterpret_cast<const uint4 *>(src + offsets[block] + row * pitch + unit * sizeof(uint4));
  }
}

} // namespace

void gather_blocks(void *dst, const void *src, const int64_t *offsets, size_t count,
                   size_t block_rows, size_t row_bytes, size_t pitch, cudaStream_t stream) {
  const size_t row_units = row_bytes / sizeof(uint4), total = count * block_rows * row_units;
  if (total == 0)
    return;
  const int blocks = static_cast<int>(std::min<size_t>((total + kThreads - 1) / kThreads, 65536));
  gather_blocks_kernel<<<blocks, kThreads, 0, stream>>>(
      static_cast<uint4 *>(dst), static_cast<const unsigned char *>(src), offsets, count,
      block_rows, row_units, pitch);
  HONE_CUDA_CHECK(cudaGetLastError());
}

} // namespace hone::cuda

#include "model/step_kernels.h"

#include <cuda_bf16.h>

#include "cuda/backend/cuda_check.h"

namespace hone::model {
namespace {

__device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_uniform_kernel(__nv_bfloat16 *dst, size_t count, uint64_t seed, float scale,
                                    float offset) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(seed * 0x632be59bd9b4e019ull + i);
    const float u = float(h >> 40) * (2.0f / 16777216.0f) - 1.0f; // [-1, 1)
    dst[i] = __float2bfloat16_rn(offset + scale * u);
  }
}

__global__ void add_bias_kernel(__nv_bfloat16 *y, const __nv_bfloat16 *bias, int64_t rows,
                                int64_t width) {
  const int64_t total = rows * width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(__bfloat162float(y[i]) + __bfloat162float(bias[i % width]));
}

__global__ void gather_rows_kernel(__nv_bfloat16 *dst, const __nv_bfloat16 *src, int64_t rows,
                                   int64_t src_rows_per_row, int64_t offset, int64_t width) {
  const int64_t total = rows * width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, j = i % width;
    dst[i] = src[(r * src_rows_per_row + offset) * width + j];
  }
}

int blocks_for(size_t count) {
  const size_t b = (count + 255) / 256;
  return static_cast<int>(b < 4096 ? (b ? b : 1) : 4096);
}

} // namespace

void fill_uniform_bf16(void *dst, size_t count, uint64_t seed, float scale, float offset,
                       cudaStream_t stream) {
  fill_uniform_kernel<<<blocks_for(count), 256, 0, stream>>>(static_cast<__nv_bfloat16 *>(dst),
                                                             count, seed, scale, offset);
  HONE_CUDA_CHECK(cudaGetLastError());
}

void add_bias_bf16(void *y, const void *bias, int64_t rows, int64_t width, cudaStream_t stream) {
  add_bias_kernel<<<blocks_for(size_t(rows * width)), 256, 0, stream>>>(
      static_cast<__nv_bfloat16 *>(y), static_cast<const __nv_bfloat16 *>(bias), rows, width);
  HONE_CUDA_CHECK(cudaGetLastError());
}

void gather_rows_bf16(void *dst, const void *src, int64_t rows, int64_t src_rows_per_row,
                      int64_t offset, int64_t width, cudaStream_t stream) {
  gather_rows_kernel<<<blocks_for(size_t(rows * width)), 256, 0, stream>>>(
      static_cast<__nv_bfloat16 *>(dst), static_cast<const __nv_bfloat16 *>(src), rows,
      src_rows_per_row, offset, width);
  HONE_CUDA_CHECK(cudaGetLastError());
}

} // namespace hone::model

#include "cuda/random_fill.h"

#include <algorithm>

#include "cuda/cuda_check.h"

namespace hone::cuda {

namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// float -> bf16 bits, round to nearest even (inputs are finite).
__device__ __forceinline__ uint16_t to_bf16_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__global__ void fill_random_bf16_kernel(uint16_t *dst, size_t count, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint64_t h = splitmix64(seed ^ splitmix64(i));
    // 24 random bits -> [0, 1) -> [-1, 1)
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
    dst[i] = to_bf16_bits(2.0f * u - 1.0f);
  }
}

} // namespace

void fill_random_bf16(void *dst, size_t count, uint64_t seed, cudaStream_t stream) {
  if (count == 0)
    return;
  constexpr int threads = 256;
  const size_t wanted = (count + threads - 1) / threads;
  const int blocks = static_cast<int>(std::min<size_t>(wanted, 65536));
  fill_random_bf16_kernel<<<blocks, threads, 0, stream>>>(static_cast<uint16_t *>(dst), count,
                                                          seed);
  HONE_CUDA_CHECK(cudaGetLastError());
}

} // namespace hone::cuda

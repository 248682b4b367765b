#include "cuda/backend/random_fill.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <string>

#include "cuda/backend/cuda_check.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// [0, 1) from the top 24 bits of a hash.
__device__ __forceinline__ float unit_float(uint64_t h) {
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
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
    dst[i] = to_bf16_bits(2.0f * unit_float(h) - 1.0f);
  }
}

__global__ void fill_random_u32_kernel(uint32_t *dst, size_t count, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dst[i] = static_cast<uint32_t>(splitmix64(seed ^ splitmix64(i)) >> 32);
}

__global__ void fill_random_affine_params_kernel(uint16_t *scales, uint16_t *biases, size_t count,
                                                 float q_max, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint64_t h = splitmix64(seed ^ splitmix64(i));
    const float range = 0.015f + 0.285f * unit_float(h);
    const float centre = 0.8f + 0.4f * unit_float(h << 24);
    scales[i] = to_bf16_bits(range / q_max);
    biases[i] = to_bf16_bits(-0.5f * range * centre);
  }
}

int blocks_for(size_t count) {
  const size_t wanted = (count + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<size_t>(wanted, 65536));
}

} // namespace

uint64_t next_random_seed() {
  static const uint64_t base = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  return base + 0x9e3779b97f4a7c15ull * (counter.fetch_add(1) + 1);
}

void fill_random_bf16(void *dst, size_t count, uint64_t seed, cudaStream_t stream) {
  if (count == 0)
    return;
  fill_random_bf16_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<uint16_t *>(dst),
                                                                      count, seed);
  HONE_CUDA_CHECK(cudaGetLastError());
}

void fill_random_u32(void *dst, size_t count, uint64_t seed, cudaStream_t stream) {
  if (count == 0)
    return;
  fill_random_u32_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<uint32_t *>(dst),
                                                                     count, seed);
  HONE_CUDA_CHECK(cudaGetLastError());
}

void fill_random_affine_params(void *scales, void *biases, size_t count, int bits, uint64_t seed,
                               cudaStream_t stream) {
  HONE_CHECK(bits >= 1 && bits <= 8,
             "affine parameters need bits in 1..8, got " + std::to_string(bits));
  if (count == 0)
    return;
  const auto q_max = static_cast<float>((1 << bits) - 1);
  fill_random_affine_params_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      static_cast<uint16_t *>(scales), static_cast<uint16_t *>(biases), count, q_max, seed);
  HONE_CUDA_CHECK(cudaGetLastError());
}

} // namespace hone::cuda

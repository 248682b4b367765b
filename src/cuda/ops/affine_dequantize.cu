#include "cuda/ops/affine_dequantize.h"

#include <algorithm>
#include <string>

#include <cuda_bf16.h>

#include "cuda/backend/cuda_check.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int kThreads = 256;

// One thread per 16-byte vector of q (32 / BITS values per word, 4 words): every value of
// one vector lies in one group (a group spans at least 32 values, a vector at most 32 and
// both are aligned along K), so the thread reads one (scale, bias) pair and writes
// 4 x 32 / BITS bf16 with 16-byte stores.
template <int BITS>
__global__ void affine_dequantize_kernel(const uint4 *__restrict__ q,
                                         const __nv_bfloat16 *__restrict__ scales,
                                         const __nv_bfloat16 *__restrict__ biases,
                                         uint4 *__restrict__ w, size_t vectors, int group) {
  constexpr int kPerWord = 32 / BITS;
  constexpr int kPerVector = 4 * kPerWord; // K values per 16-byte vector of q
  constexpr uint32_t kMask = (1u << BITS) - 1u;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t v = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += stride) {
    // Rows of W are k values long and k is a multiple of kPerVector, so the flat index of
    // the vector's first value, divided by group, is its group's flat index.
    const size_t first = v * kPerVector;
    const size_t g = first / static_cast<size_t>(group);
    const float scale = __bfloat162float(scales[g]);
    const float bias = __bfloat162float(biases[g]);
    const uint4 words = q[v];
    const uint32_t word[4] = {words.x, words.y, words.z, words.w};
    // kPerVector bf16 = 64 (4-bit) or 32 (8-bit) bytes: 4 or 2 stores of 16 bytes.
    __align__(16) __nv_bfloat16 out[kPerVector];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < kPerWord; ++j) {
        const auto value = static_cast<float>((word[i] >> (j * BITS)) & kMask);
        out[i * kPerWord + j] = __float2bfloat16_rn(__fmaf_rn(value, scale, bias));
      }
    const auto *src = reinterpret_cast<const uint4 *>(out);
    uint4 *dst = w + v * (kPerVector * sizeof(__nv_bfloat16) / sizeof(uint4));
#pragma unroll
    for (size_t i = 0; i < kPerVector * sizeof(__nv_bfloat16) / sizeof(uint4); ++i)
      dst[i] = src[i];
  }
}

} // namespace

void affine_dequantize_bf16(const uint32_t *q, const void *scales, const void *biases, void *w,
                            int n, int k, int bits, int group, cudaStream_t stream) {
  if (n < 1)
    HONE_INVALID_ARGUMENT("affine_dequantize_bf16: n=" + std::to_string(n) + " is below 1");
  if (bits != 4 && bits != 8)
    HONE_INVALID_ARGUMENT("affine_dequantize_bf16: bits=" + std::to_string(bits) +
                          " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    HONE_INVALID_ARGUMENT("affine_dequantize_bf16: group=" + std::to_string(group) +
                          " is not 32, 64 or 128");
  if (k < group || k % group != 0)
    HONE_INVALID_ARGUMENT("affine_dequantize_bf16: k=" + std::to_string(k) +
                          " is not a positive multiple of group=" + std::to_string(group));
  if (reinterpret_cast<uintptr_t>(q) % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0)
    HONE_INVALID_ARGUMENT("affine_dequantize_bf16: q and w must be 16-byte aligned");
  // 128 bits of q per thread; k * bits is a multiple of 32 x 4 = 128, so rows hold whole
  // vectors.
  const size_t vectors = static_cast<size_t>(n) * static_cast<size_t>(k) * bits / 128;
  const int blocks =
      static_cast<int>(std::min<size_t>((vectors + kThreads - 1) / kThreads, size_t{1} << 16));
  const auto *qv = reinterpret_cast<const uint4 *>(q);
  const auto *s = static_cast<const __nv_bfloat16 *>(scales);
  const auto *b = static_cast<const __nv_bfloat16 *>(biases);
  auto *wv = static_cast<uint4 *>(w);
  if (bits == 4)
    affine_dequantize_kernel<4><<<blocks, kThreads, 0, stream>>>(qv, s, b, wv, vectors, group);
  else
    affine_dequantize_kernel<8><<<blocks, kThreads, 0, stream>>>(qv, s, b, wv, vectors, group);
  HONE_CUDA_CHECK(cudaGetLastError());
}

} // namespace hone::cuda

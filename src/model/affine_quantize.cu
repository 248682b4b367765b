// One thread per (row, group): it finds the group's min and max, then packs its q words. The
// arithmetic is quantize_affine's (src/cpu/affine_quant.cpp) operation for operation in IEEE
// fp32 (nvcc's default: division correctly rounded, no contraction of a subtraction and a
// division), so the bits agree: min is the first smallest and max the last largest value, as
// std::minmax_element gives them; rintf rounds half to even, as std::nearbyint does.
#include "model/affine_quantize.h"

#include <string>

#include "cuda/backend/cuda_check.h"
#include "hone/error.h"

namespace hone::model {
namespace {

__device__ float widen(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }

// hone::float_to_bf16: nearest, ties to even; NaN stays a quiet NaN.
__device__ uint16_t narrow(float value) {
  const uint32_t u = __float_as_uint(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x0040u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__global__ void quantize_affine_kernel(const uint16_t *w, uint32_t *q, uint16_t *scales,
                                       uint16_t *biases, int64_t n, int64_t k, int bits,
                                       int group) {
  const int64_t groups = k / group, total = n * groups;
  const int per_word = 32 / bits;
  const uint32_t q_max = (1u << bits) - 1u;
  for (int64_t item = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; item < total;
       item += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = item / groups, g = item % groups;
    const uint16_t *v = w + row * k + g * group;
    float lo = widen(v[0]), hi = lo;
    for (int i = 1; i < group; ++i) {
      const float x = widen(v[i]);
      if (x < lo)
        lo = x;
      if (!(x < hi))
        hi = x;
    }
    const uint16_t scale_bits = narrow((hi - lo) / float(q_max));
    const uint16_t bias_bits = narrow(lo);
    scales[item] = scale_bits;
    biases[item] = bias_bits;
    const float scale = widen(scale_bits), bias = widen(bias_bits);
    // k % group == 0 and group % per_word == 0: the group owns whole words.
    uint32_t *out = q + (row * k + g * group) / per_word;
    for (int word = 0; word < group / per_word; ++word) {
      uint32_t packed = 0;
      for (int j = 0; j < per_word; ++j) {
        uint32_t value = 0;
        if (scale > 0.0f) {
          float t = rintf(__fsub_rn(widen(v[word * per_word + j]), bias) / scale);
          t = t < 0.0f ? 0.0f : (float(q_max) < t ? float(q_max) : t);
          value = uint32_t(t);
        }
        packed |= value << (j * bits);
      }
      out[word] = packed;
    }
  }
}

} // namespace

void quantize_affine_bf16(const void *w, uint32_t *q, void *scales, void *biases, int64_t n,
                          int64_t k, int bits, int group, cudaStream_t stream) {
  if (n < 1 || k < 1 || (bits != 4 && bits != 8) || (group != 32 && group != 64 && group != 128) ||
      k % group != 0)
    HONE_INVALID_ARGUMENT("device affine quantization: n=" + std::to_string(n) +
                          ", k=" + std::to_string(k) + ", bits=" + std::to_string(bits) +
                          ", group=" + std::to_string(group) +
                          " (needs n, k >= 1, bits 4 or 8, group 32, 64 or 128 dividing k)");
  const int64_t total = n * (k / group);
  const int64_t blocks = (total + 255) / 256;
  quantize_affine_kernel<<<int(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(
      static_cast<const uint16_t *>(w), q, static_cast<uint16_t *>(scales),
      static_cast<uint16_t *>(biases), n, k, bits, group);
  HONE_CUDA_CHECK(cudaGetLastError());
}

} // namespace hone::model

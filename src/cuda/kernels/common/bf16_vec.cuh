// Vectors of bf16 for the row kernels of a decode step (rmsnorm, silu_mul, rope, kv_append):
// VEC = 8 (16-byte loads) or 4 (8-byte loads), unpacked to fp32 and packed back with one
// round-to-nearest-even per element. Device code only.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

namespace hone::cuda::kernel_detail {

template <int VEC> struct Bf16Vec;
template <> struct Bf16Vec<8> {
  using Raw = uint4;
  static constexpr int kWords = 4;
};
template <> struct Bf16Vec<4> {
  using Raw = uint2;
  static constexpr int kWords = 2;
};

template <int VEC> union Bf16Pack {
  typename Bf16Vec<VEC>::Raw raw;
  uint32_t words[Bf16Vec<VEC>::kWords];
};

template <int VEC> __device__ __forceinline__ Bf16Pack<VEC> load_vec(const uint16_t *p) {
  Bf16Pack<VEC> v;
  v.raw = *reinterpret_cast<const typename Bf16Vec<VEC>::Raw *>(p);
  return v;
}
// Read once and not by this CTA again (weights of a step, a row streamed through): L1 bypassed.
template <int VEC> __device__ __forceinline__ Bf16Pack<VEC> load_vec_stream(const uint16_t *p) {
  Bf16Pack<VEC> v;
  v.raw = __ldcs(reinterpret_cast<const typename Bf16Vec<VEC>::Raw *>(p));
  return v;
}
template <int VEC> __device__ __forceinline__ void store_vec(uint16_t *p, const Bf16Pack<VEC> &v) {
  *reinterpret_cast<typename Bf16Vec<VEC>::Raw *>(p) = v.raw;
}

template <int VEC> __device__ __forceinline__ void unpack(const Bf16Pack<VEC> &v, float (&f)[VEC]) {
#pragma unroll
  for (int i = 0; i < VEC / 2; ++i) {
    f[2 * i] = __uint_as_float(v.words[i] << 16);
    f[2 * i + 1] = __uint_as_float(v.words[i] & 0xffff0000u);
  }
}

// Round to nearest even, once per element.
template <int VEC> __device__ __forceinline__ Bf16Pack<VEC> pack(const float (&f)[VEC]) {
  Bf16Pack<VEC> v;
#pragma unroll
  for (int i = 0; i < VEC / 2; ++i) {
    const __nv_bfloat162 b = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    v.words[i] = *reinterpret_cast<const uint32_t *>(&b);
  }
  return v;
}

// SiLU(g) x u in fp32 for a decode step's MLP: g / (1 + exp(-g)) x u, exp as ex2.approx of
// -g log2 e, the division IEEE. silu_mul and the gate/up linears' fused epilogue both call it, so
// that the fused step gives the separate launches' bits.
__device__ __forceinline__ float silu_mul_value(float g, float u) {
  return __fdiv_rn(g, 1.0f + __expf(-g)) * u;
}

} // namespace hone::cuda::kernel_detail

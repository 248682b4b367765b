// silu_mul device code. Included only by silu_mul.cu.
//
// Grid (CTA spans of a row, rows). Thread x of CTA (s, r) takes the vectors c = s x threads x
// VECTORS + u x threads + x, u = 0 .. VECTORS-1, of row r (neighbouring lanes read
// neighbouring vectors). No reduction: out = bf16(silu_mul_value(g, u)) per element in fp32
// (bf16_vec.cuh), the same bits under every config.
//
// PDL: gate and up are activations, read after griddepcontrol.wait; the kernel has no weights.
#pragma once

#include <cstdint>

#include "cuda/kernels/common/bf16_vec.cuh"
#include "cuda/kernels/common/pdl.cuh"

namespace hone::cuda::silu_mul_detail {

using namespace kernel_detail;

struct Params {
  const uint16_t *gate;
  const uint16_t *up;
  uint16_t *out;
  int rows, inter;
  int64_t gate_stride, up_stride, out_stride; // [elements]
};

template <int VEC, int VECTORS> __global__ void __launch_bounds__(512) silu_mul_kernel(Params p) {
  const int row = blockIdx.y;
  const int vectors = p.inter / VEC;
  const int first = blockIdx.x * blockDim.x * VECTORS + threadIdx.x;
  const uint16_t *gate = p.gate + static_cast<int64_t>(row) * p.gate_stride;
  const uint16_t *up = p.up + static_cast<int64_t>(row) * p.up_stride;

  pdl_wait();
  Bf16Pack<VEC> g[VECTORS], u[VECTORS];
#pragma unroll
  for (int k = 0; k < VECTORS; ++k) {
    const int c = first + k * blockDim.x;
    if (c < vectors) {
      g[k] = load_vec_stream<VEC>(gate + static_cast<int64_t>(c) * VEC);
      u[k] = load_vec_stream<VEC>(up + static_cast<int64_t>(c) * VEC);
    }
  }
  pdl_launch_dependents();

  uint16_t *out = p.out + static_cast<int64_t>(row) * p.out_stride;
#pragma unroll
  for (int k = 0; k < VECTORS; ++k) {
    const int c = first + k * blockDim.x;
    if (c < vectors) {
      float gf[VEC], uf[VEC], y[VEC];
      unpack(g[k], gf);
      unpack(u[k], uf);
#pragma unroll
      for (int v = 0; v < VEC; ++v)
        y[v] = silu_mul_value(gf[v], uf[v]);
      store_vec<VEC>(out + static_cast<int64_t>(c) * VEC, pack(y));
    }
  }
}

} // namespace hone::cuda::silu_mul_detail

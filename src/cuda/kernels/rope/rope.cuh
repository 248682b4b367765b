// rope device code. Included only by rope.cu.
//
// One thread per (token, head, VEC-wide piece i0 .. i0 + VEC - 1 of the first half), heads
// 0 .. hq - 1 of q then hkv of k, flattened in that order (token outermost), so neighbouring
// lanes take neighbouring pieces of one head. Per element: a = pos x inv_freq[i] in float64,
// reduced to r = a - 2 pi rint(a / 2 pi) in [-pi, pi] (2 pi split in two doubles), then
// __sincosf(float(r)) (absolute error <= 2^-21.4 on [-pi, pi]); out1 = x1 cos - x2 sin,
// out2 = x2 cos + x1 sin in fp32, each rounded once.
// No reduction: every config gives the same bits.
//
// PDL: positions (not written by the previous kernel of a step) are read and the angles
// computed before griddepcontrol.wait; q and k (activations) after it.
#pragma once

#include <cstdint>

#include "cuda/kernels/common/bf16_vec.cuh"
#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/rope/rope.h"

namespace hone::cuda::rope_detail {

using namespace kernel_detail;

struct Params {
  const uint16_t *q;
  const uint16_t *k;
  uint16_t *q_out;
  uint16_t *k_out;
  const int32_t *positions;
  int64_t items;                   // rows x (hq + hkv) x pieces
  int hq, heads, head_dim, pieces; // heads = hq + hkv; pieces = head_dim / 2 / VEC
  int64_t q_stride, k_stride, q_out_stride, k_out_stride; // [elements]
  double inv_freq[kRopeMaxHeadDim / 2];
};

constexpr double kTwoPiHi = 6.283185307179586;      // 2 pi rounded to double
constexpr double kTwoPiLo = 2.4492935982947064e-16; // 2 pi - kTwoPiHi
constexpr double kInvTwoPi = 0.15915494309189535;

// __grid_constant__: inv_freq is indexed in place in the parameter space, not copied to local
// memory.
template <int VEC>
__global__ void __launch_bounds__(256) rope_kernel(const __grid_constant__ Params p) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= p.items) {
    pdl_wait();
    pdl_launch_dependents();
    return;
  }
  const int piece = static_cast<int>(item % p.pieces);
  const int64_t token_head = item / p.pieces;
  const int head = static_cast<int>(token_head % p.heads);
  const int64_t row = token_head / p.heads;

  const double pos = static_cast<double>(p.positions[row]);
  float cosines[VEC], sines[VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    const double a = pos * p.inv_freq[piece * VEC + v];
    const double turns = rint(a * kInvTwoPi);
    const double r = fma(-turns, kTwoPiLo, fma(-turns, kTwoPiHi, a));
    __sincosf(static_cast<float>(r), &sines[v], &cosines[v]); // |r| <= pi: abs error 2^-21.4
  }

  const bool is_q = head < p.hq;
  const int64_t in_offset = is_q
                                ? row * p.q_stride + static_cast<int64_t>(head) * p.head_dim
                                : row * p.k_stride + static_cast<int64_t>(head - p.hq) * p.head_dim;
  const int64_t out_offset =
      is_q ? row * p.q_out_stride + static_cast<int64_t>(head) * p.head_dim
           : row * p.k_out_stride + static_cast<int64_t>(head - p.hq) * p.head_dim;
  const uint16_t *in = (is_q ? p.q : p.k) + in_offset + piece * VEC;
  uint16_t *out = (is_q ? p.q_out : p.k_out) + out_offset + piece * VEC;
  const int half = p.head_dim / 2;

  pdl_wait();
  const Bf16Pack<VEC> a1 = load_vec<VEC>(in), a2 = load_vec<VEC>(in + half);
  pdl_launch_dependents();
  float x1[VEC], x2[VEC], y1[VEC], y2[VEC];
  unpack(a1, x1);
  unpack(a2, x2);
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    y1[v] = x1[v] * cosines[v] - x2[v] * sines[v];
    y2[v] = x2[v] * cosines[v] + x1[v] * sines[v];
  }
  store_vec<VEC>(out, pack(y1));
  store_vec<VEC>(out + half, pack(y2));
}

} // namespace hone::cuda::rope_detail

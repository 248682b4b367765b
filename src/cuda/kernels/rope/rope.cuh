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
// With a q/k/v bias (Qwen2), each input element first becomes bf16(x + bias) in fp32 with one
// rounding, the bits a separate bias add would store. With the paged append (k_cache set),
// the items also cover the hkv heads of v (after those of k): roped k and v (biased or not) go
// to the new token's slot of request `row` in the paged cache, slot kv_last_page_len[row] - 1
// of page kv_indices[kv_indptr[row + 1] - 1], as kv_append writes them (a page or slot out of
// range is not written), and k_out is not written.
//
// PDL: positions and the page table (not written by the previous kernel of a step) are read
// and the angles computed before griddepcontrol.wait; q, k and v (activations) after it.
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
  int64_t items;                        // rows x heads x pieces
  int hq, hkv, heads, head_dim, pieces; // heads = hq + hkv (+ hkv of v with the append);
                                        // pieces = head_dim / 2 / VEC
  int64_t q_stride, k_stride, q_out_stride, k_out_stride; // [elements]
  const uint16_t *bias; // bf16 [(hq + 2 hkv) x head_dim] or nullptr
  // The paged append (k_cache != nullptr): v [rows, hkv, head_dim] with row stride v_stride.
  const uint16_t *v;
  int64_t v_stride;
  uint16_t *k_cache, *v_cache; // bf16 [num_pages, page_size, hkv, head_dim]
  const int32_t *kv_indptr, *kv_indices, *kv_last_page_len;
  int num_pages, page_size;
  double inv_freq[kRopeMaxHeadDim / 2];
};

// x = bf16(x + b) per element, in fp32, as a separate bias add rounds it.
template <int VEC>
__device__ __forceinline__ void add_bias(float (&x)[VEC], const Bf16Pack<VEC> &bias) {
  float b[VEC];
  unpack(bias, b);
#pragma unroll
  for (int v = 0; v < VEC; ++v)
    x[v] = __bfloat162float(__float2bfloat16_rn(x[v] + b[v]));
}

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
  // 0: q, 1: k, 2: v (the paged append only).
  const int kind = head < p.hq ? 0 : head < p.hq + p.hkv ? 1 : 2;
  const int kv_head = kind == 0 ? head : kind == 1 ? head - p.hq : head - p.hq - p.hkv;

  float cosines[VEC], sines[VEC];
  if (kind != 2) {
    const double pos = static_cast<double>(p.positions[row]);
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
      const double a = pos * p.inv_freq[piece * VEC + v];
      const double turns = rint(a * kInvTwoPi);
      const double r = fma(-turns, kTwoPiLo, fma(-turns, kTwoPiHi, a));
      __sincosf(static_cast<float>(r), &sines[v], &cosines[v]); // |r| <= pi: abs error 2^-21.4
    }
  }

  const int64_t in_offset = kind == 0   ? row * p.q_stride
                            : kind == 1 ? row * p.k_stride
                                        : row * p.v_stride;
  const uint16_t *in = (kind == 0   ? p.q
                        : kind == 1 ? p.k
                                    : p.v) +
                       in_offset + static_cast<int64_t>(kv_head) * p.head_dim + piece * VEC;
  uint16_t *out = nullptr;
  if (kind == 0) {
    out = p.q_out + row * p.q_out_stride;
  } else if (p.k_cache == nullptr) {
    out = p.k_out + row * p.k_out_stride;
  } else {
    // The new token's slot of request `row`, as kv_append finds it.
    const int page = p.kv_indices[p.kv_indptr[row + 1] - 1];
    const int slot = p.kv_last_page_len[row] - 1;
    if (page >= 0 && page < p.num_pages && slot >= 0 && slot < p.page_size)
      out = (kind == 1 ? p.k_cache : p.v_cache) +
            (static_cast<int64_t>(page) * p.page_size + slot) * p.hkv * p.head_dim;
  }
  if (out != nullptr)
    out += static_cast<int64_t>(kv_head) * p.head_dim + piece * VEC;
  const int half = p.head_dim / 2;

  pdl_wait();
  const Bf16Pack<VEC> a1 = load_vec<VEC>(in), a2 = load_vec<VEC>(in + half);
  pdl_launch_dependents();
  float x1[VEC], x2[VEC], y1[VEC], y2[VEC];
  unpack(a1, x1);
  unpack(a2, x2);
  if (p.bias != nullptr) {
    const uint16_t *b = p.bias + static_cast<int64_t>(head) * p.head_dim + piece * VEC;
    add_bias<VEC>(x1, load_vec<VEC>(b));
    add_bias<VEC>(x2, load_vec<VEC>(b + half));
  }
  if (out == nullptr)
    return;
  if (kind == 2) { // v: copied (its exact bits), or biased (values already bf16)
    store_vec<VEC>(out, p.bias != nullptr ? pack(x1) : a1);
    store_vec<VEC>(out + half, p.bias != nullptr ? pack(x2) : a2);
    return;
  }
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    y1[v] = x1[v] * cosines[v] - x2[v] * sines[v];
    y2[v] = x2[v] * cosines[v] + x1[v] * sines[v];
  }
  store_vec<VEC>(out, pack(y1));
  store_vec<VEC>(out + half, pack(y2));
}

} // namespace hone::cuda::rope_detail

// rmsnorm device code. Included only by rmsnorm.cu.
//
// T threads take one row (T = threads, a power of two), R rows share a CTA. Thread t of a row
// loads the vectors (VEC bf16 each) c = t, t + T, t + 2T, ... of the row into registers (at
// most kRmsnormMaxChunks), so the row is read once for both passes.
//
// Summation order of mean h^2 (depends on L = T x VEC alone, hence batch invariant for any
// row count and equal for every config of the same L):
//   1. L fp32 partial sums: partial j takes the squares of the elements i = j, j + L, j + 2L,
//      ... of the row, in increasing i (element i = c x VEC + v of vector c lands in partial
//      (c mod T) x VEC + v);
//   2. a complete binary tree over j = 0 .. L-1 pairing neighbours first: (p0 + p1) + (p2 +
//      p3), ...: inside a thread over its VEC partials, then across the lanes of a row with
//      xor shuffles 1, 2, 4, ..., then across the warps of a row (T > 32) through shared
//      memory, again neighbours first (missing warps add +0, which changes nothing).
// Then rstd = rsqrt(sum / hidden + eps) and out = bf16((h x rstd) x w), one rounding. With a
// residual, h = bf16(x + residual) is what residual_out holds and what is normalised, so a
// fused call equals the residual add followed by a plain rmsnorm of its result, bit for bit.
//
// PDL: w is loaded before griddepcontrol.wait (it is a weight); x and residual after it.
#pragma once

#include <cstdint>

#include "cuda/kernels/common/bf16_vec.cuh"
#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "cuda/kernels/rmsnorm/rmsnorm_row.cuh"

namespace hone::cuda::rmsnorm_detail {

using namespace kernel_detail;

constexpr int kMaxChunks = kRmsnormMaxChunks;
constexpr int kMaxWarps = kRmsnormMaxThreadsPerCta / 32;

struct Params {
  const uint16_t *x;
  const uint16_t *residual;
  uint16_t *residual_out;
  const uint16_t *w;
  uint16_t *out;
  int rows, hidden;
  int64_t x_stride, residual_stride, residual_out_stride, out_stride; // [elements]
  float eps;
  int threads_log2; // threads per row = 1 << threads_log2
  int trigger_early; // griddepcontrol.launch_dependents at the start (chain_early_trigger)
};

template <int VEC, bool RESIDUAL>
__global__ void __launch_bounds__(kRmsnormMaxThreadsPerCta) rmsnorm_kernel(Params p) {
  __shared__ float warp_sums[kMaxWarps];
  if (p.trigger_early)
    pdl_launch_dependents();
  const int threads = 1 << p.threads_log2;
  const int t = threadIdx.x & (threads - 1);
  const int row_in_cta = threadIdx.x >> p.threads_log2;
  const int row = blockIdx.x * (blockDim.x >> p.threads_log2) + row_in_cta;
  const bool live = row < p.rows;
  const int vectors = p.hidden / VEC;

  Bf16Pack<VEC> w[kMaxChunks];
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    const int c = t + k * threads;
    if (live && c < vectors)
      w[k] = load_vec<VEC>(p.w + static_cast<int64_t>(c) * VEC);
  }

  pdl_wait();
  // h is exactly a bf16 value (x, or x + residual rounded once): kept packed.
  Bf16Pack<VEC> h[kMaxChunks];
  const uint16_t *x = p.x + static_cast<int64_t>(row) * p.x_stride;
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    const int c = t + k * threads;
    if (live && c < vectors) {
      h[k] = load_vec<VEC>(x + static_cast<int64_t>(c) * VEC);
      if constexpr (RESIDUAL) {
        float a[VEC], r[VEC];
        unpack(h[k], a);
        unpack(load_vec<VEC>(p.residual + static_cast<int64_t>(row) * p.residual_stride +
                             static_cast<int64_t>(c) * VEC),
               r);
#pragma unroll
        for (int v = 0; v < VEC; ++v)
          a[v] += r[v];
        h[k] = pack(a);
      }
    } else {
#pragma unroll
      for (int i = 0; i < Bf16Vec<VEC>::kWords; ++i)
        h[k].words[i] = 0u;
    }
  }
  pdl_launch_dependents();

  if constexpr (RESIDUAL) {
    uint16_t *ro = p.residual_out + static_cast<int64_t>(row) * p.residual_out_stride;
#pragma unroll
    for (int k = 0; k < kMaxChunks; ++k) {
      const int c = t + k * threads;
      if (live && c < vectors)
        store_vec<VEC>(ro + static_cast<int64_t>(c) * VEC, h[k]);
    }
  }

  // 1. partials in increasing element order.
  float part[VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v)
    part[v] = 0.f;
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    float f[VEC];
    unpack(h[k], f);
#pragma unroll
    for (int v = 0; v < VEC; ++v)
      part[v] = fmaf(f[v], f[v], part[v]);
  }
  // 2. neighbours first: inside the thread, across lanes, across warps.
  float sum = rmsnorm_row::tree_sum(part);
  const int lane_span = threads < 32 ? threads : 32;
  for (int offset = 1; offset < lane_span; offset *= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threads > 32) {
    const int warps = threads >> 5;
    if ((threadIdx.x & 31) == 0)
      warp_sums[threadIdx.x >> 5] = sum;
    __syncthreads();
    sum = rmsnorm_row::warp_tree_sum<kMaxWarps>(warp_sums + row_in_cta * warps, warps);
  }
  const float rstd = rsqrtf(sum / static_cast<float>(p.hidden) + p.eps);

  if (!live)
    return;
  uint16_t *out = p.out + static_cast<int64_t>(row) * p.out_stride;
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    const int c = t + k * threads;
    if (c < vectors) {
      float hf[VEC], wf[VEC], y[VEC];
      unpack(h[k], hf);
      unpack(w[k], wf);
#pragma unroll
      for (int v = 0; v < VEC; ++v)
        y[v] = hf[v] * rstd * wf[v];
      store_vec<VEC>(out + static_cast<int64_t>(c) * VEC, pack(y));
    }
  }
}

} // namespace hone::cuda::rmsnorm_detail

// rmsnorm of one row by a whole CTA, in rmsnorm's own summation order (rmsnorm.cuh): the
// building block of a linear that normalises its own activations (docs/notes/decode_step.md,
// "rmsnorm inside the next linear"). For the lanes L of an rmsnorm config, row_rstd gives that
// config's rstd bit for bit, whatever the CTA's size, so a fused launch can give the separate
// launches' bits.
//
// Why the order carries over: rmsnorm's partial j (j < L) takes the squares of elements j,
// j + L, j + 2L, ... in increasing order, and the L partials are summed as a complete binary
// tree, neighbours first. A contiguous, aligned block of 2^m partials is a subtree. Here thread
// t of T (T a power of two, T <= L) owns the partials [t L / T, (t + 1) L / T): it sums them as
// their subtree (a binary counter over the block: equal levels combine as they complete), then
// the threads combine by xor shuffles 1, 2, ..., 16 and the warps through shared memory,
// neighbours first, as rmsnorm's warps do. fp32 addition is commutative, so only the tree's
// shape matters, not which operand is on the left.
//
//   __shared__ float warp_sums[rmsnorm_row::kMaxWarps];
//   const float rstd = rmsnorm_row::row_rstd(x, residual, hidden, lanes, eps, warp_sums);
//   // element i of the normalised row: rmsnorm_row::normalised(h_i, rstd, w_i)
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include "cuda/kernels/common/bf16_vec.cuh"

namespace hone::cuda::rmsnorm_row {

// h of element i: x[i], or bf16(x[i] + residual[i]) (fp32 sum rounded once) with a residual, as
// rmsnorm forms it.
__device__ __forceinline__ float row_value(const uint16_t *x, const uint16_t *residual, int i) {
  const float a = __uint_as_float(static_cast<uint32_t>(x[i]) << 16);
  if (residual == nullptr)
    return a;
  const float s = a + __uint_as_float(static_cast<uint32_t>(residual[i]) << 16);
  return __bfloat162float(__float2bfloat16_rn(s));
}

// out = bf16((h x rstd) x w), rmsnorm's one rounding.
__device__ __forceinline__ uint16_t normalised(float h, float rstd, uint16_t w) {
  const float y = h * rstd * __uint_as_float(static_cast<uint32_t>(w) << 16);
  return __bfloat16_as_ushort(__float2bfloat16_rn(y));
}

// The sum of `warps` warp sums (warps <= MAX_WARPS), neighbours first as a complete binary tree
// over MAX_WARPS leaves padded with +0 (which changes nothing): rmsnorm's cross-warp order.
template <int MAX_WARPS>
__device__ __forceinline__ float warp_tree_sum(const float *warp_sums, int warps) {
  float s[MAX_WARPS];
#pragma unroll
  for (int i = 0; i < MAX_WARPS; ++i)
    s[i] = i < warps ? warp_sums[i] : 0.f;
#pragma unroll
  for (int step = 1; step < MAX_WARPS; step *= 2)
#pragma unroll
    for (int i = 0; i < MAX_WARPS; i += 2 * step)
      s[i] += s[i + step];
  return s[0];
}

// Partials a thread may own (lanes / threads): 2^(kLevels - 1).
inline constexpr int kLevels = 8;
// Warps a CTA may have.
inline constexpr int kMaxWarps = 32;

// rstd = rsqrtf(sum / hidden + eps) of the row (x, plus residual when not null), summed in the
// order of rmsnorm's `lanes` partials. Every thread of the CTA calls it (it synchronises the
// CTA) and gets the same value. Every index is known at compile time after unrolling, so it
// takes no local memory (the spill rule). Where a thread owns 8 partials or more it reads them
// 8 at a time with 16-byte loads. REQUIRES: blockDim.x a power of two from 32 to 1024; lanes a
// power of two, from blockDim.x to 2^(kLevels - 1) x blockDim.x; hidden a multiple of 8 and
// the rows 16-byte aligned; warp_sums shared, kMaxWarps floats.
__device__ __forceinline__ float row_rstd(const uint16_t *x, const uint16_t *residual, int hidden,
                                          int lanes, float eps, float *warp_sums) {
  const int threads = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int per_thread = lanes / threads; // a power of two
  // Binary counter: level[b] holds a completed subtree of 2^b partials until its right
  // neighbour of the same size completes. carry() adds the index-th subtree of 2^base partials.
  float level[kLevels];
#pragma unroll
  for (int b = 0; b < kLevels; ++b)
    level[b] = 0.f;
  auto carry = [&](float part, int index, int base) {
    bool placed = false;
#pragma unroll
    for (int b = 0; b < kLevels; ++b) {
      if (b >= base && !placed) {
        if ((index >> (b - base)) & 1) {
          part = level[b] + part; // left neighbour + this
        } else {
          level[b] = part;
          placed = true;
        }
      }
    }
  };
  if (per_thread >= 8) {
    // Eight neighbouring partials at a time, from 16-byte loads: their elements at each stride
    // of `lanes` are eight consecutive values.
    for (int q = 0; q < per_thread / 8; ++q) {
      float part[8];
#pragma unroll
      for (int v = 0; v < 8; ++v)
        part[v] = 0.f;
      for (int i = t * per_thread + 8 * q; i < hidden; i += lanes) {
        float h[8];
        kernel_detail::unpack(kernel_detail::load_vec<8>(x + i), h);
        if (residual != nullptr) {
          float r[8];
          kernel_detail::unpack(kernel_detail::load_vec<8>(residual + i), r);
#pragma unroll
          for (int v = 0; v < 8; ++v)
            r[v] += h[v];
          kernel_detail::unpack(kernel_detail::pack(r), h); // rounded once, as rmsnorm
        }
#pragma unroll
        for (int v = 0; v < 8; ++v)
          part[v] = fmaf(h[v], h[v], part[v]);
      }
#pragma unroll
      for (int step = 1; step < 8; step *= 2)
#pragma unroll
        for (int v = 0; v < 8; v += 2 * step)
          part[v] += part[v + step];
      carry(part[0], q, 3);
    }
  } else {
    for (int p = 0; p < per_thread; ++p) {
      float part = 0.f;
      for (int i = t * per_thread + p; i < hidden; i += lanes) {
        const float h = row_value(x, residual, i);
        part = fmaf(h, h, part);
      }
      carry(part, p, 0);
    }
  }
  // per_thread partials are one subtree, at level log2(per_thread).
  float sum = 0.f;
#pragma unroll
  for (int b = 0; b < kLevels; ++b)
    if ((1 << b) == per_thread)
      sum = level[b];
  for (int offset = 1; offset < 32; offset *= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const int warps = threads >> 5;
  if (warps > 1) {
    if ((t & 31) == 0)
      warp_sums[t >> 5] = sum;
    __syncthreads();
    sum = warp_tree_sum<kMaxWarps>(warp_sums, warps);
    __syncthreads(); // warp_sums may be reused after the call
  }
  return rsqrtf(sum / static_cast<float>(hidden) + eps);
}

} // namespace hone::cuda::rmsnorm_row

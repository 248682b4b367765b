// The deterministic split-K reduction shared by the GEMV-family kernels: every warp has written
// an fp32 partial per output to shared memory; the k_slices = warps_k x split_k partials of an
// output are added in slice order (through distributed shared memory across the CTAs of a
// thread-block cluster), so the summation order depends on k_slices alone.
#pragma once

#include <cstdint>

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include "cuda/kernels/common/bf16_vec.cuh"
#include "cuda/kernels/common/mma_fragment.h"

namespace hone::cuda::kernel_detail {

// The gate/up linear with SiLU x up in its epilogue (SILU = true; the mma path of gemv.bf16).
// W is [gate; up], 2 p.silu_inter rows, and n = 2 p.silu_inter. The kernel computes logical rows
// j = 16 T + 8 h + i (i < 8) as weight row h inter + 8 T + i, so that every m16 tile holds 8 gate
// rows and the 8 up rows of the same outputs, and reduce_and_store writes y[r, 8 T + i] =
// bf16(silu_mul_value(bf16(gate), bf16(up))): the bits of the linear's bf16 store followed by
// silu_mul. Each output's K order is the plain linear's. A template flag, so that the plain
// kernels' code and registers stay as they are.
// The weight row of logical row j (clamped to the last row; see above).
template <bool SILU, class Params>
__device__ __forceinline__ int weight_row(const Params &p, int j) {
  j = min(j, p.n - 1);
  if constexpr (SILU)
    return ((j >> 3) & 1) * p.silu_inter + ((j >> 4) << 3) + (j & 7);
  else
    return j;
}

// s[0..3] += v, element by element (the partial adds of the epilogues).
__device__ __forceinline__ void add4(float *s, const float4 &v) {
  s[0] += v.x;
  s[1] += v.y;
  s[2] += v.z;
  s[3] += v.w;
}

// Before a CTA's partials are read: the cluster's barrier (split_k CTAs of a cluster) or the
// CTA's.
__device__ __forceinline__ void partials_written(int split_k) {
#if __CUDA_ARCH__ >= 900
  if (split_k > 1) {
    cooperative_groups::this_cluster().sync();
    return;
  }
#endif
  __syncthreads();
}

// After the reduce: keeps every CTA's shared memory alive until the cluster has read it.
__device__ __forceinline__ void partials_read(int split_k) {
#if __CUDA_ARCH__ >= 900
  if (split_k > 1)
    cooperative_groups::this_cluster().sync();
#endif
}

// `Params` needs: rows, n, warps_n, warps_k, split_k and y (bf16 bits [rows, n]); with SILU,
// silu_inter (above: y is then [rows, silu_inter], and m_per_warp a multiple of 16).
// Adds the k_slices partials of every output of this CTA in slice order and stores bf16.
// `partials` is this CTA's dynamic shared memory: [warps_k][warps_n][floats_per_warp].
// Outputs are spread over the ranks of the cluster; `index(m_in_warp, r_local)` gives an
// output's float offset inside a warp's partial.
// NOTE: every thread of every CTA of the cluster reaches both cluster barriers.
template <bool SILU = false, class Params, class Index>
__device__ __forceinline__ void
reduce_and_store(const Params &p, const float *partials, int floats_per_warp, int m_per_warp,
                 int rows_per_cta, int m_cta, int row0, Index index) {
  const int rank = static_cast<int>(blockIdx.y);
  partials_written(p.split_k);
  const int m_per_cta = p.warps_n * m_per_warp;
  // One thread per output, or per (gate, up) pair of outputs with the SiLU epilogue.
  const int m_items = SILU ? m_per_cta / 2 : m_per_cta;
  const int outputs = m_items * rows_per_cta;
  const int per_rank = (outputs + p.split_k - 1) / p.split_k;
  const int end = min(outputs, (rank + 1) * per_rank);
  const int k_slices = p.warps_k * p.split_k;
  // The k_slices partials of local output (m_local, r_local), added in slice order.
  auto reduce = [&](int m_local, int r_local) {
    const int offset =
        (m_local / m_per_warp) * floats_per_warp + index(m_local % m_per_warp, r_local);
    const int warp_stride = p.warps_n * floats_per_warp;
    float sum = 0.0f;
    for (int s = 0; s < k_slices; ++s) {
      const int src = s / p.warps_k;
      const float *base = partials;
#if __CUDA_ARCH__ >= 900
      if (src != rank)
        base = cooperative_groups::this_cluster().map_shared_rank(partials, src);
#endif
      sum += base[(s - src * p.warps_k) * warp_stride + offset];
    }
    return sum;
  };
  for (int o = rank * per_rank + static_cast<int>(threadIdx.x); o < end;
       o += static_cast<int>(blockDim.x)) {
    const int item = o % m_items;
    const int r_local = o / m_items;
    const int r = row0 + r_local;
    // With the SiLU epilogue, item i is the gate row 16 (i / 8) + i % 8 of its m16 tile.
    const int m_local = SILU ? ((item >> 3) << 4) + (item & 7) : item;
    const int m = m_cta + m_local;
    if (m >= p.n || r >= p.rows)
      continue;
    if constexpr (SILU) {
      const float gate = __bfloat162float(__float2bfloat16_rn(reduce(m_local, r_local)));
      const float up = __bfloat162float(__float2bfloat16_rn(reduce(m_local + 8, r_local)));
      p.y[static_cast<size_t>(r) * p.silu_inter + ((m >> 4) << 3) + (m & 7)] =
          __bfloat16_as_ushort(__float2bfloat16_rn(silu_mul_value(gate, up)));
    } else {
      p.y[static_cast<size_t>(r) * p.n + m] =
          __bfloat16_as_ushort(__float2bfloat16_rn(reduce(m_local, r_local)));
    }
  }
  partials_read(p.split_k);
}

// Where a thread of an mma-path kernel works. The CTA grid is (n tiles, split_k, row groups);
// the CTA's warps are warps_n x warps_k, warp_n fastest; warp (warp_n, warp_k) of cluster rank
// y takes K slice y * warps_k + warp_k and MT m16 tiles of weight rows from m_warp.
struct MmaWarpCoords {
  int lane, warp;
  int slice;     // K slice of this warp, 0 .. warps_k x split_k - 1 (summation order)
  int g, t;      // mma fragment coordinates: lane = 4 g + t
  int m_cta;     // first weight row of the CTA
  int m_warp;    // first weight row of the warp
  int row0;      // first activation row of the CTA
};
// WARP_ROWS: the weight rows of a warp (MT m16 tiles, or fewer where a warp leaves a tile's upper
// half zero).
template <int MT, int NT, int WARP_ROWS = MT * 16, class Params>
__device__ __forceinline__ MmaWarpCoords mma_warp_coords(const Params &p) {
  MmaWarpCoords c;
  c.lane = static_cast<int>(threadIdx.x) & 31;
  c.warp = static_cast<int>(threadIdx.x) >> 5;
  const int warp_n = c.warp % p.warps_n;
  const int warp_k = c.warp / p.warps_n;
  c.slice = static_cast<int>(blockIdx.y) * p.warps_k + warp_k;
  c.g = c.lane >> 2;
  c.t = c.lane & 3;
  c.m_cta = static_cast<int>(blockIdx.x) * p.warps_n * WARP_ROWS;
  c.m_warp = c.m_cta + warp_n * WARP_ROWS;
  c.row0 = static_cast<int>(blockIdx.z) * NT * 8;
  return c;
}

// Sets every m16n8 accumulator to 0 (unrolled: the array stays in registers).
template <int MT, int NT> __device__ __forceinline__ void zero_accumulators(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        acc[mt][nt][i] = 0.0f;
}

// Warp `warp`'s m16n8 accumulators acc[MT][NT][4] into `partials` (shared memory, MT x NT x 128
// floats per warp), tile by tile: tile = m16 tile x NT + n8 tile, 32 lanes x float4
// (mma_partial_offset reads them back).
template <int MT, int NT>
__device__ __forceinline__ void store_mma_partials(float4 *partials, const float (&acc)[MT][NT][4],
                                                   int warp, int lane) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      partials[(warp * MT * NT + mt * NT + nt) * 32 + lane] =
          make_float4(acc[mt][nt][0], acc[mt][nt][1], acc[mt][nt][2], acc[mt][nt][3]);
}

// The mma-path epilogue: warp `warp` stores its m16n8 accumulators acc[MT][NT][4] tile by
// tile into `partials` (this CTA's dynamic shared memory, MT x NT x 128 floats per warp), then
// the CTA (and its cluster) reduces and stores bf16 Y through reduce_and_store.
// NOTE: every thread of every CTA of the cluster must call it (it holds cluster barriers).
template <int MT, int NT, bool SILU = false, class Params>
__device__ __forceinline__ void
store_mma_partials_and_reduce(const Params &p, float4 *partials, const float (&acc)[MT][NT][4],
                              int warp, int lane, int m_cta, int row0) {
  constexpr int kFloatsPerWarp = MT * NT * 128;
  store_mma_partials(partials, acc, warp, lane);
  reduce_and_store<SILU>(p, reinterpret_cast<const float *>(partials), kFloatsPerWarp, MT * 16,
                         NT * 8, m_cta, row0, mma_partial_offset<NT>);
}

// The same epilogue, reduced a float4 at a time: the items are the m16n8 fragments' float4 of one
// slice's partials (warps_n x MT x NT x 32 of them), spread over the ranks of the cluster and
// the threads of each CTA; an item's warps_k x split_k partials are added in slice order from
// 0.0f (the sums and bits of reduce_and_store) and its four outputs stored. A fourth of
// reduce_and_store's iterations, with no per-output division, and float4 loads. Not for the
// SiLU epilogue.
// NOTE: every thread of every CTA of the cluster must call it (it holds cluster barriers).
template <int MT, int NT, class Params>
__device__ __forceinline__ void
store_mma_partials_and_reduce_fragments(const Params &p, float4 *partials,
                                        const float (&acc)[MT][NT][4], int warp, int lane,
                                        int m_cta, int row0) {
  store_mma_partials(partials, acc, warp, lane);
  const int rank = static_cast<int>(blockIdx.y);
  partials_written(p.split_k);
  constexpr int kWarpItems = MT * NT * 32;
  const int items = p.warps_n * kWarpItems;
  const int per_rank = (items + p.split_k - 1) / p.split_k;
  const int end = min(items, (rank + 1) * per_rank);
  for (int f = rank * per_rank + static_cast<int>(threadIdx.x); f < end;
       f += static_cast<int>(blockDim.x)) {
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int src = 0; src < p.split_k; ++src) {
      const float4 *base = partials;
#if __CUDA_ARCH__ >= 900
      if (src != rank)
        base = cooperative_groups::this_cluster().map_shared_rank(partials, src);
#endif
      for (int wk = 0; wk < p.warps_k; ++wk)
        add4(sum, base[wk * items + f]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const FragmentPlace at = mma_item_place<MT, NT>(f, i);
      const int m = m_cta + at.m_local, r = row0 + at.r_local;
      if (m < p.n && r < p.rows)
        p.y[static_cast<size_t>(r) * p.n + m] = __bfloat16_as_ushort(__float2bfloat16_rn(sum[i]));
    }
  }
  partials_read(p.split_k);
}

} // namespace hone::cuda::kernel_detail

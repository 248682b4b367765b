// The deterministic split-K reduction shared by the GEMV-family kernels: every warp has written
// an fp32 partial per output to shared memory; the k_slices = warps_k x split_k partials of an
// output are added in slice order (through distributed shared memory across the CTAs of a
// thread-block cluster), so the summation order depends on k_slices alone.
#pragma once

#include <cstdint>

#include <cooperative_groups.h>
#include <cuda_bf16.h>

namespace hone::cuda::kernel_detail {

// `Params` needs: rows, n, warps_n, warps_k, split_k and y (bf16 bits [rows, n]).
// Adds the k_slices partials of every output of this CTA in slice order and stores bf16.
// `partials` is this CTA's dynamic shared memory: [warps_k][warps_n][floats_per_warp].
// Outputs are spread over the ranks of the cluster; `index(m_in_warp, r_local)` gives an
// output's float offset inside a warp's partial.
// NOTE: every thread of every CTA of the cluster reaches both cluster barriers.
template <class Params, class Index>
__device__ __forceinline__ void
reduce_and_store(const Params &p, const float *partials, int floats_per_warp, int m_per_warp,
                 int rows_per_cta, int m_cta, int row0, Index index) {
  const int rank = static_cast<int>(blockIdx.y);
#if __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (p.split_k > 1)
    cluster.sync();
  else
    __syncthreads();
#else
  __syncthreads();
#endif
  const int m_per_cta = p.warps_n * m_per_warp;
  const int outputs = m_per_cta * rows_per_cta;
  const int per_rank = (outputs + p.split_k - 1) / p.split_k;
  const int end = min(outputs, (rank + 1) * per_rank);
  const int k_slices = p.warps_k * p.split_k;
  for (int o = rank * per_rank + static_cast<int>(threadIdx.x); o < end;
       o += static_cast<int>(blockDim.x)) {
    const int m_local = o % m_per_cta;
    const int r_local = o / m_per_cta;
    const int m = m_cta + m_local;
    const int r = row0 + r_local;
    if (m >= p.n || r >= p.rows)
      continue;
    const int offset =
        (m_local / m_per_warp) * floats_per_warp + index(m_local % m_per_warp, r_local);
    const int warp_stride = p.warps_n * floats_per_warp;
    float sum = 0.0f;
    for (int s = 0; s < k_slices; ++s) {
      const int src = s / p.warps_k;
      const float *base = partials;
#if __CUDA_ARCH__ >= 900
      if (src != rank)
        base = cluster.map_shared_rank(partials, src);
#endif
      sum += base[(s - src * p.warps_k) * warp_stride + offset];
    }
    p.y[static_cast<size_t>(r) * p.n + m] = __bfloat16_as_ushort(__float2bfloat16_rn(sum));
  }
#if __CUDA_ARCH__ >= 900
  // Keeps every CTA's shared memory alive until the cluster has read it.
  if (p.split_k > 1)
    cluster.sync();
#endif
}

// Float offset, inside a warp's partial, of output (m_in_warp, r_local) when the warp stored
// its m16n8 mma accumulators tile by tile (tile = m16 tile x NT + n8 tile, 32 lanes x float4):
// accumulator i of lane (g, t) holds weight row g + 8 * (i / 2), activation row 2t + i % 2.
template <int NT> __device__ __forceinline__ int mma_partial_offset(int m_in_warp, int r_local) {
  const int mm = m_in_warp % 16;
  const int nn = r_local % 8;
  const int tile = (m_in_warp / 16) * NT + r_local / 8;
  const int fragment_lane = (mm % 8) * 4 + nn / 2;
  return (tile * 32 + fragment_lane) * 4 + (mm / 8) * 2 + nn % 2;
}

} // namespace hone::cuda::kernel_detail

// Where the GEMV family's m16n8 accumulators sit in a CTA's split-K partials, shared by the
// epilogues (split_k_reduce.cuh) and a host test. No CUDA header needed by includers.
//
// A warp stores its MT x NT m16n8 tiles one after another (tile = m16 tile x NT + n8 tile), each
// as 32 lanes x float4; lane (g, t) = 4 g + t holds accumulator i at weight row g + 8 (i / 2) and
// activation row 2 t + i % 2 of its tile. A slice's partial is warps_n such warps, warp_n
// fastest.
#pragma once

#if defined(__CUDACC__)
#define HONE_FRAGMENT_FN __host__ __device__ __forceinline__
#else
#define HONE_FRAGMENT_FN inline
#endif

namespace hone::cuda::kernel_detail {

// Float offset, inside a warp's partial, of output (m_in_warp, r_local).
template <int NT> HONE_FRAGMENT_FN int mma_partial_offset(int m_in_warp, int r_local) {
  const int mm = m_in_warp % 16;
  const int nn = r_local % 8;
  const int tile = (m_in_warp / 16) * NT + r_local / 8;
  const int fragment_lane = (mm % 8) * 4 + nn / 2;
  return (tile * 32 + fragment_lane) * 4 + (mm / 8) * 2 + nn % 2;
}

// An output of a CTA: its weight row and activation row from the CTA's first.
struct FragmentPlace {
  int m_local, r_local;
};

// The output of accumulator i of float4 `item` of a slice's partial (warps_n warps of MT x NT
// tiles): the inverse of mma_partial_offset across the warps.
template <int MT, int NT> HONE_FRAGMENT_FN FragmentPlace mma_item_place(int item, int i) {
  constexpr int kWarpItems = MT * NT * 32;
  const int warp_n = item / kWarpItems;
  const int tile = (item % kWarpItems) >> 5;
  const int g = (item >> 2) & 7, t = item & 3;
  return {warp_n * MT * 16 + (tile / NT) * 16 + g + 8 * (i >> 1),
          (tile % NT) * 8 + 2 * t + (i & 1)};
}

} // namespace hone::cuda::kernel_detail

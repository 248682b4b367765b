// qmv.affine's ring path device code: the op's chunk policy for the weights-once ring kernel of
// the GEMV family (../common/weight_ring.cuh). Each chunk goes through mma_chunk, the mma
// path's own chunk arithmetic, with the group parameters of the lane's rows loaded per chunk,
// so a ring config is bit-identical to the mma configs of equal k_slices. Included only by
// qmv_affine_ring.cu.
#pragma once

#include <cstdint>

#include "cuda/kernels/common/weight_ring.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine.cuh"

namespace hone::cuda::qmv_affine_detail {

struct RingExtra {
  const uint16_t *scales; // bf16 [n, k / group]
  const uint16_t *biases; // bf16 [n, k / group]
  int groups_per_row;     // k / group
  int group_shift;        // log2(group)
};

template <int BITS, int NT, int MT, int GROUPS> struct RingChunk {
  using L = Layout<BITS>;
  using R = LaneRuns<BITS, GROUPS>;
  static constexpr int kChunkK = L::kChunkK;
  static constexpr int kLaneK = L::kLaneK;
  static constexpr int kXVectors = L::kXVectors;
  // The lane's words and activations of a chunk in kRuns runs (LaneRuns).
  static constexpr int kRuns = R::kRuns;
  using Extra = RingExtra;
  // A lane's rows' first group parameter: n x groups_per_row < 2^31 (the launcher checks).
  struct Tile {
    int so[MT][2];
  };
  struct Loads {
    uint32_t scale[MT][2];
    uint32_t bias[MT][2];
  };

  __device__ __forceinline__ static Tile tile(const Extra &e, const kernel_detail::RingParams &p,
                                              int m_warp, int g) {
    Tile tl;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        // Rows past the end are clamped to a valid row; their results are never stored.
        tl.so[mt][h] = min(m_warp + mt * 16 + h * 8 + g, p.n - 1) * e.groups_per_row;
    return tl;
  }

  __device__ __forceinline__ static void issue(const Extra &e, const Tile &tl, int chunk, int t,
                                               Loads &l) {
    // The group of the lane's (first) run.
    const int group = R::first_k(chunk, t) >> e.group_shift;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Unsigned (< 2^31): a zero-extended index costs one LEA pair per address, where the
        // signed sum was sign-extended and shifted as 64 bits (five instructions, SASS).
        const uint32_t i = static_cast<uint32_t>(tl.so[mt][h] + group);
        if constexpr (kRuns == 1) {
          l.scale[mt][h] = load_parameter(e.scales + i);
          l.bias[mt][h] = load_parameter(e.biases + i);
        } else {
          l.scale[mt][h] = load_parameter_pair(e.scales + i);
          l.bias[mt][h] = load_parameter_pair(e.biases + i);
        }
      }
  }

  // A tile ahead (weight_ring_kernel): the group parameters of the lane's rows of tile `tl`
  // over the slice's chunks [c0, c1), asked of L2 (prefetch.global.L2, a hint: no value read),
  // one 128-byte line per lane of the row's four (a row's slice is 1-4 lines at g64 and K
  // 4096-14336). The one-chunk-ahead loads of issue() then find them in L2.
  __device__ __forceinline__ static void prefetch(const Extra &e, const Tile &tl, int t, int c0,
                                                  int c1) {
    if (c0 >= c1)
      return;
    const uint32_t first = static_cast<uint32_t>(c0 * kChunkK) >> e.group_shift;
    const uint32_t last = static_cast<uint32_t>(c1 * kChunkK - 1) >> e.group_shift;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t row = static_cast<uint32_t>(tl.so[mt][h]); // row x groups_per_row
        // The lines holding the slice's first to last parameter of the row, by address: each
        // asked line holds at least one of them.
        // Lane t asks for the t-th line: the first four, which hold the whole slice up to 256
        // groups (16384 K at g64).
        const uint16_t *arrays[2] = {e.scales, e.biases};
#pragma unroll
        for (const uint16_t *a : arrays) {
          const uintptr_t line = (reinterpret_cast<uintptr_t>(a + row + first) & ~uintptr_t{127}) +
                                 128 * static_cast<uintptr_t>(t);
          if (line <= reinterpret_cast<uintptr_t>(a + row + last))
            prefetch_line_l2(reinterpret_cast<const void *>(line));
        }
      }
  }

  __device__ __forceinline__ static void multiply(float (&acc)[MT][NT][4], const uint4 (&w)[MT][2],
                                                  const Loads &l, const uint4 (&x)[NT][kXVectors]) {
    WeightFragment<MT> f;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f.q[mt][h] = w[mt][h];
        f.scale[mt][h] = l.scale[mt][h];
        f.bias[mt][h] = l.bias[mt][h];
      }
    mma_chunk<BITS, NT, MT, GROUPS>(acc, f, x);
  }
};

} // namespace hone::cuda::qmv_affine_detail

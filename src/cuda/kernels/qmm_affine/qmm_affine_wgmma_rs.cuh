// qmm.affine's register-A wgmma path (device code, sm_90a): the mma path's data flow
// (qmm_affine_mma.cuh: the same cp.async ring of weights, group parameters and activations, the
// same per-weight dequantisation into mma A fragments, the same epilogue) with the tensor work on
// wgmma.mma_async m64nTMk16 instead of mma.sync m16n8k16.
//
// Why: at 32-64 activation rows the mma path issues at 0.47 per scheduler per cycle, each warp
// waiting on its own chain lds -> prmt -> lop3 -> hadd2 -> hfma2 -> mma
// (docs/notes/qmm_affine.md). Here a warpgroup (4 warps, 64 weight rows) issues one asynchronous
// wgmma per 16 K whose B (the activations) is read by the tensor core from shared memory, and
// dequantises the next 16 K into the other of two A fragments while it runs; TM / 8 mma.sync and
// TM / 16 ldmatrix per warp and step become one wgmma per warpgroup.
//
// Layout: WN = 4 WGN warps split the BN = 64 WGN weight rows (16 each: warp w of a warpgroup
// holds rows 16 w of its wgmma's M), WK warpgroups split each BK = 64 WK deep K block. The
// activation stage is WK canonical K-major 128-byte-swizzled atoms of TM x 64 bf16 (8-row groups
// of 1024 bytes, 16-byte chunk c of row r at chunk c ^ (r & 7)): the layout a wgmma descriptor
// with SWIZZLE_128B and a stride of 1024 bytes reads, one atom per warpgroup, advanced 32 bytes
// per 16-deep step.
// The wgmma accumulator of m64nN holds, per warp, the m16n8 C fragments of N / 8 tiles in order,
// so acc[1][TM / 8][4] is the mma path's accumulator and its epilogue applies unchanged.
// Measured on the H200 (docs/benchmark_results/2026-12-04-h200-2): it ties the mma.sync kernels at
// 16-32 rows and wins by 5-10 % at 64 rows on two of the four Llama-3.1-8B shapes.
#pragma once

#include <cstdint>
#include <utility>

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>

#include "cuda/kernels/qmm_affine/qmm_affine_mma.cuh"

namespace hone::cuda::qmm_rs_detail {

using namespace hone::cuda::kernel_detail;
using qmm_mma_detail::CopyPlan;
using qmm_mma_detail::dequant_pair;
using qmm_mma_detail::kParamWindow;
using qmm_mma_detail::kWarpK;
using qmm_mma_detail::lds128;
using qmm_mma_detail::lds32;
using qmm_mma_detail::param_window;
using qmm_mma_detail::Params;

template <int TM, int WGN, int WK, int STAGES> struct Layout {
  static constexpr int kTm = TM;
  static constexpr int kWn = 4 * WGN;
  static constexpr int kBn = 64 * WGN;
  static constexpr int kBk = kWarpK * WK;
  static constexpr int kWarps = kWn * WK;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWeightPitch = kBk / 2 + 16;
  static constexpr int kWeightStage = kBn * kWeightPitch;
  static constexpr int kAtom = TM * 128; // one 64-deep K atom of the activation tile
  static constexpr int kActivationStage = WK * kAtom;
  static constexpr int kParamStage = kBn * 2 * kParamWindow;
  static constexpr int kStage = kWeightStage + kActivationStage + kParamStage;
  static constexpr int kPipeline = STAGES * kStage;
  static constexpr int kPartials = kWarps * (TM / 8) * 128 * 4;
  // + 1024: the ring is aligned to 1024 bytes (SWIZZLE_128B atoms) inside the dynamic window.
  static constexpr int kShared = (kPipeline > kPartials ? kPipeline : kPartials) + 1024;
  static_assert(TM == 16 || TM == 32 || TM == 64 || TM == 128,
                "wgmma N of 16, 32, 64 or 128 activation rows");
  static_assert(kWeightStage % 1024 == 0 && kStage % 1024 == 0,
                "every activation atom starts on a 1024-byte boundary");
};

// The SWIZZLE_128B K-major descriptor of the 8-row groups at shared address `addr` (1024-byte
// aligned but for the 32-byte step offset inside the atom).
__device__ __forceinline__ uint64_t activation_desc(uint32_t addr) {
  cute::GmmaDescriptor d;
  d.bitfield.start_address_ = static_cast<uint16_t>(addr >> 4);
  d.bitfield.leading_byte_offset_ = 1;        // unused by swizzled K-major layouts
  d.bitfield.stride_byte_offset_ = 1024 >> 4; // 8 rows x 128 bytes to the next 8 rows
  d.bitfield.base_offset_ = 0;
  d.bitfield.layout_type_ = 1; // SWIZZLE_128B
  return d.desc_;
}

template <int TM> struct Wgmma;
template <> struct Wgmma<16> {
  using Atom = cute::SM90::GMMA::MMA_64x16x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K,
                                                             cute::SM90::GMMA::Major::K>;
};
template <> struct Wgmma<32> {
  using Atom = cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K,
                                                             cute::SM90::GMMA::Major::K>;
};
template <> struct Wgmma<64> {
  using Atom = cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K,
                                                             cute::SM90::GMMA::Major::K>;
};

template <> struct Wgmma<128> {
  using Atom = cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K,
                                                              cute::SM90::GMMA::Major::K>;
};

template <> struct Wgmma<256> {
  using Atom = cute::SM90::GMMA::MMA_64x256x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K,
                                                              cute::SM90::GMMA::Major::K>;
};

template <int TM, size_t... I>
__device__ __forceinline__ void wgmma_step(float (&d)[TM / 2], const uint32_t (&a)[4],
                                           uint64_t desc, std::index_sequence<I...>) {
  Wgmma<TM>::Atom::fma(a[0], a[1], a[2], a[3], desc, d[I]...);
}

// One wgmma of the warpgroup: the A fragment and the accumulators fenced, issued, committed.
template <int TM>
__device__ __forceinline__ void wgmma_issue(float (&d)[TM / 2], uint32_t (&a)[4], uint64_t desc) {
#pragma unroll
  for (int r = 0; r < 4; ++r)
    cute::warpgroup_fence_operand(a[r]);
#pragma unroll
  for (int r = 0; r < TM / 2; ++r)
    cute::warpgroup_fence_operand(d[r]);
  cute::warpgroup_arrive();
  wgmma_step<TM>(d, a, desc, std::make_index_sequence<TM / 2>{});
  cute::warpgroup_commit_batch();
}

// LATE: a stage is refilled one block later, with the block before the last: the CTA barrier at
// a block's start then finds every wgmma of that stage done (each warp waits for all but its
// last wgmma at every step), so no block ends by draining its wgmma (wait_group 0). The copies
// run STAGES - 2 blocks ahead instead of STAGES - 1. Same products in the same order.
template <int TM, int WGN, int WK, int STAGES, int MIN_BLOCKS, bool LATE = false>
__global__ void __launch_bounds__(4 * WGN * WK * 32, MIN_BLOCKS)
    qmm_affine_wgmma_rs_kernel(const Params p) {
  static_assert(!LATE || STAGES >= 3, "a stage is refilled two blocks after its use");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = Layout<TM, WGN, WK, STAGES>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wn = warp % L::kWn, wk = warp / L::kWn;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = static_cast<int>(blockIdx.x) * L::kBn;
  const int m0 = static_cast<int>(blockIdx.z) * L::kTm;
  const int slice = static_cast<int>(blockIdx.y);
  const int blocks = p.k / L::kBk;
  const int kb0 = slice * blocks / p.split_k;
  const int kb1 = (slice + 1) * blocks / p.split_k;
  const int nblocks = kb1 - kb0;
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t smem_base = (raw_base + 1023u) & ~1023u;
  unsigned char *const smem = smem_raw + (smem_base - raw_base);

  // The mma path's copy plan; the activations go to canonical 64-deep SW128 atoms.
  const CopyPlan<L> plan(p, tid, n0, m0, [](int r, int piece) {
    return static_cast<uint32_t>(L::kWeightStage + (piece >> 3) * L::kAtom + r * 128 +
                                 (((piece & 7) ^ (r & 7)) << 4));
  });
  auto copy_weights = [&](int kb, int stage) {
    plan.copy_weights(p, smem_base + stage * L::kStage, kb);
  };
  auto copy_activations = [&](int kb, int stage) {
    plan.copy_activations(smem_base + stage * L::kStage, kb);
  };

  constexpr int kAhead = LATE ? STAGES - 2 : STAGES - 1; // blocks in flight before a block
#pragma unroll
  for (int s = 0; s < kAhead; ++s)
    if (s < nblocks)
      copy_weights(kb0 + s, s);
  pdl_wait();
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < nblocks)
      copy_activations(kb0 + s, s);
    copy_async_commit();
  }

  float d[TM / 2];
#pragma unroll
  for (int r = 0; r < TM / 2; ++r)
    d[r] = 0.0f;

  const uint32_t selector = static_cast<uint32_t>(t) | (static_cast<uint32_t>(4 + t) << 8);
  const bool group32 = p.group_shift == 5;
  const int row0 = wn * 16;
  uint32_t a[2][4];
  for (int i0 = 0; i0 < nblocks; i0 += STAGES) {
#pragma unroll
    for (int j = 0; j < STAGES; ++j) {
      const int i = i0 + j;
      if (i >= nblocks)
        break;
      copy_async_wait<kAhead - 1>();
      __syncthreads();
      const int refill = (j + kAhead) % STAGES;
      if (i + kAhead < nblocks) {
        copy_weights(kb0 + i + kAhead, refill);
        copy_activations(kb0 + i + kAhead, refill);
      }
      copy_async_commit();
      const int kb = kb0 + i;
      const int slot = ((kb * L::kBk + wk * kWarpK) >> p.group_shift) -
                       param_window(kb, L::kBk, p.group_shift, p.param_bytes);
      const uint32_t stage = smem_base + j * L::kStage;
      const uint32_t p_stage = stage + L::kWeightStage + L::kActivationStage;
      const uint32_t atom = stage + L::kWeightStage + wk * L::kAtom;
      const uint32_t pair = static_cast<uint32_t>(slot & ~1) * 2;
      uint32_t sw[2], bw[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t row = static_cast<uint32_t>(row0 + g + 8 * h);
        sw[h] = lds32(p_stage + row * kParamWindow + pair);
        bw[h] = lds32(p_stage + L::kBn * kParamWindow + row * kParamWindow + pair);
      }
      const uint32_t pick0 = (slot & 1) ? 0x3232u : 0x1010u;
      const uint32_t pick1 = group32 ? 0x3232u : pick0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        uint4 words[2];
        __nv_bfloat162 sc[2], bi[2];
        const uint32_t pick = half ? pick1 : pick0;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          words[h] =
              lds128(stage + (row0 + g + 8 * h) * L::kWeightPitch + wk * (kWarpK / 2) + half * 16);
          uint32_t sv, bv;
          asm("prmt.b32 %0, %1, 0, %2;" : "=r"(sv) : "r"(sw[h]), "r"(pick));
          asm("prmt.b32 %0, %1, 0, %2;" : "=r"(bv) : "r"(bw[h]), "r"(pick));
          sc[h] = *reinterpret_cast<__nv_bfloat162 *>(&sv);
          bi[h] = *reinterpret_cast<__nv_bfloat162 *>(&bv);
        }
#pragma unroll
        for (int ss = 0; ss < 2; ++ss) {
          const int step = 2 * half + ss; // 0..3: the buffer is step & 1
          uint32_t(&f)[4] = a[step & 1];
          f[0] = dequant_pair(ss ? words[0].z : words[0].x, selector, sc[0], bi[0]);
          f[1] = dequant_pair(ss ? words[1].z : words[1].x, selector, sc[1], bi[1]);
          f[2] = dequant_pair(ss ? words[0].w : words[0].y, selector, sc[0], bi[0]);
          f[3] = dequant_pair(ss ? words[1].w : words[1].y, selector, sc[1], bi[1]);
          wgmma_issue<TM>(d, f, activation_desc(atom + 32 * step));
          // The wgmma of the step before has read its A: that buffer is refilled next.
          cute::warpgroup_wait<1>();
        }
      }
      if constexpr (!LATE) {
        // Every wgmma of this block has read its stage before the barrier that frees it.
        cute::warpgroup_wait<0>();
#pragma unroll
        for (int r = 0; r < TM / 2; ++r)
          cute::warpgroup_fence_operand(d[r]);
      }
    }
  }
  if constexpr (LATE) {
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int r = 0; r < TM / 2; ++r)
      cute::warpgroup_fence_operand(d[r]);
  }
  copy_async_wait<0>();
  __syncthreads();
  pdl_launch_dependents();
  float acc[1][TM / 8][4];
#pragma unroll
  for (int j = 0; j < TM / 8; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      acc[0][j][r] = d[4 * j + r];
  struct {
    int rows, n, warps_n, warps_k, split_k;
    uint16_t *y;
  } const out{p.m, p.n, L::kWn, WK, p.split_k, p.y};
  store_mma_partials_and_reduce_fragments<1, TM / 8>(out, reinterpret_cast<float4 *>(smem), acc,
                                                     warp, lane, n0, m0);
#endif
}

} // namespace hone::cuda::qmm_rs_detail

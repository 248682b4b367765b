// qmm.affine's mma path, TMA engine (device code, sm_90a): a warp-specialised kernel. One producer
// warp streams every 256-deep K block of the weight words, group parameters and activations into a
// ring of shared-memory stages with tensor-memory-access copies (one per array and block, the
// activations as four 64-deep atoms), guarded by full / empty mbarriers; 4 WGN consumer warps (WGN
// warpgroups of 64 weight rows) dequantise the words into wgmma A fragments in registers and
// multiply them with the activation atoms (wgmma.mma_async m64nTMk16, B from shared memory).
//
// Why: the register-A wgmma kernel (qmm_affine_wgmma_rs.cuh) has every thread copy with cp.async
// and the CTA meet at a barrier per K block; timed with parts of its work removed
// (docs/benchmark_results/2026-12-04-h200-2, call 2) its copies alone took 45 us and its math
// alone 64 us of its 82 us on 28672 x 4096 at 64 rows. Here the copies are a handful of
// instructions of one warp, the consumers never meet at a CTA barrier in the main loop, and a
// stage is handed back one block late, so that one wgmma stays in flight across blocks.
//
// Summation order: each output adds, per K slice (split_k CTAs of a cluster), its 16-deep wgmma
// products in increasing K; the slices are added in slice order (../common/split_k_reduce.cuh).
// The stream-K kernels (STREAM) instead walk a persistent grid's share of all (tile, K block)
// units (../common/stream_k.h); a tile's segments are added in K order by the CTA holding its
// first K block.
//
// Shared memory per stage (1024-byte aligned, what SWIZZLE_128B copies and descriptors need):
//   W: BN rows x 128 bytes (256 K of 4-bit words), 16-byte chunk c of row r at c ^ (r % 8);
//   X: 4 atoms of TM rows x 128 bytes (64 K of bf16), the canonical K-major SW128 layout;
//   S, B: BN rows x 8 bf16 scales, then biases: the aligned window of 8 groups holding the block's.
#pragma once

#include <cstdint>
#include <utility>

#include <cuda.h>

#include "cuda/kernels/common/stream_k.h"
#include "cuda/kernels/common/weight_stream.cuh"
#include "cuda/kernels/qmm_affine/qmm_affine_wgmma_rs.cuh"
#include "cuda/kernels/qmm_affine/qmm_tma_swizzle.h"

namespace hone::cuda::qmm_tma_detail {

using namespace hone::cuda::kernel_detail;
using qmm_mma_detail::exact_pair;
using qmm_mma_detail::lds128;
using qmm_mma_detail::lds32;
using qmm_rs_detail::activation_desc;
using qmm_rs_detail::wgmma_issue;
using qmm_rs_detail::wgmma_step;

inline constexpr int kParamGroups = 8;  // groups per row in a stage's parameter window
inline constexpr int kActivationK = 64; // K per activation atom (128 bytes of bf16)

struct TmaParams {
  CUtensorMap q;         // uint32 [n][k / 8], box {BK / 8, BN}, SWIZZLE_128B (64B at BK 128)
  CUtensorMap x;         // bf16 [m][k], box {64, TM}, SWIZZLE_128B
  CUtensorMap scales;    // bf16 [n][k / group], box {8, BN}
  CUtensorMap biases;    // bf16 [n][k / group], box {8, BN}
  uint16_t *y = nullptr; // bf16 [m][n]
  int m = 0, n = 0, k = 0;
  int group_shift = 6;
  int split_k = 1;
  // Stream-K only: the units of all tiles (tiles_n weight tiles by the activation tiles, each
  // k / BK blocks), the writers' fp32 partials (one slot of TM x BN per CTA, thread-major) and
  // their flags, raised to `token` (never 0, new per launch) and reset by the reader.
  int tiles_n = 0;
  int units = 0;
  float *partials = nullptr;
  unsigned long long *flags = nullptr;
  unsigned long long token = 0;
};

// BK: K per stage, 256 (a row's words 128 bytes, SWIZZLE_128B) or 128 (64 bytes, SWIZZLE_64B:
// half the shared memory per stage, for more stages, more CTAs per SM or 128 activation rows).
// WGK: warpgroups along K. Each of the WGN weight tiles has WGK warpgroups, each taking BK / 16 /
// WGK steps of every block into its own accumulators, added in warpgroup order before the
// epilogue: WGK consumer warps a scheduler on one tile.
template <int TM, int WGN, int STAGES, int BK, int WGK = 1> struct TmaLayout {
  static constexpr int kTm = TM;
  static constexpr int kBn = 64 * WGN;
  static constexpr int kBk = BK;
  static constexpr int kStoreWarps = 4 * WGN; // the warps of warpgroups k = 0: they store
  static constexpr int kConsumerWarps = 4 * WGN * WGK;
  static constexpr int kThreads = (kConsumerWarps + 1) * 32; // + the producer warp
  static constexpr int kRowBytes = BK / 2; // a weight row's 4-bit words in one stage
  static constexpr int kWeight = kBn * kRowBytes;
  static constexpr int kAtom = TM * 128;
  static constexpr int kActivation = (BK / kActivationK) * kAtom;
  static constexpr int kParam = kBn * kParamGroups * 2;
  static constexpr int kStage = kWeight + kActivation + 2 * kParam;
  static constexpr int kBarriers = 2 * STAGES * 8;
  static constexpr int kPartials = kConsumerWarps * (TM / 8) * 128 * 4;
  static constexpr int kRing = STAGES * kStage;
  // The ring, later the epilogue's partials; the mbarriers after both.
  static constexpr int kBarrierOffset = kRing > kPartials ? kRing : kPartials;
  // + 1024: the ring is aligned to 1024 bytes inside the dynamic window.
  static constexpr int kShared = kBarrierOffset + kBarriers + 1024;
  static_assert(TM == 16 || TM == 32 || TM == 64 || TM == 128 || TM == 256,
                "wgmma N of 16..256 rows");
  static_assert(kWeight % 1024 == 0 && kAtom % 1024 == 0 && kStage % 1024 == 0,
                "every swizzled tile starts on a 1024-byte boundary");
  static_assert(STAGES >= 3, "a stage is handed back one block late");
  static_assert(BK == 128 || BK == 256, "K blocks of 128 or 256");
  static_assert((BK / 16 / WGK) % 2 == 0 && BK / 16 / WGK * WGK == BK / 16,
                "an even number of steps a warpgroup and block");
  // Byte offset in a stage of 16-byte chunk c of weight row `row` (g = row % 8): where the
  // swizzled copy put it (qmm_tma_swizzle.h).
  static __device__ __forceinline__ uint32_t word_offset(uint32_t row, uint32_t g, uint32_t c) {
    return tma_word_offset<BK>(row, g, c);
  }
};

__device__ __forceinline__ void flag_release(unsigned long long *flag, unsigned long long value) {
  asm volatile("st.release.gpu.global.b64 [%0], %1;" ::"l"(flag), "l"(value) : "memory");
}

__device__ __forceinline__ unsigned long long flag_acquire(const unsigned long long *flag) {
  unsigned long long value;
  asm volatile("ld.acquire.gpu.global.b64 %0, [%1];" : "=l"(value) : "l"(flag) : "memory");
  return value;
}

// Tile coordinates of a CTA's i-th K block: its weight rows n0, activation rows m0 and K block.
struct TmaUnit {
  int n0, m0, kb;
};

// Stores fragment column j of a consumer warp (v: its 4 accumulators, activation rows
// m0 + 8 j + 2 t (+ 1)) as bf16: weight row n0 + 16 warp + g (+ 8).
__device__ __forceinline__ void store_fragment_column(const TmaParams &p, const float *v, int n0,
                                                      int m0, int warp, int lane, int j) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int n = n0 + warp * 16 + g + 8 * (e >> 1);
    const int m = m0 + 8 * j + 2 * t + (e & 1);
    if (m < p.m && n < p.n)
      p.y[static_cast<size_t>(m) * p.n + n] = __bfloat16_as_ushort(__float2bfloat16_rn(v[e]));
  }
}

// Stores a consumer warp's tile of outputs as bf16 from its m16n8 C fragments (TM / 8 tiles).
template <int TM>
__device__ __forceinline__ void store_fragments(const TmaParams &p, const float (&d)[TM / 2],
                                                int n0, int m0, int warp, int lane) {
#pragma unroll
  for (int j = 0; j < TM / 8; ++j)
    store_fragment_column(p, d + 4 * j, n0, m0, warp, lane, j);
}

// The split-K epilogue of a consumer thread of cluster rank `rank`: for fragment columns j = rank,
// rank + split_k, ... of its warp, the split_k ranks' partials at this thread's place (float4
// (warp TM / 8 + j) 32 + lane of each rank's `partials`), added in rank order from 0.0f, stored
// as bf16 like store_fragments.
template <int TM>
__device__ __forceinline__ void cluster_reduce_store(const TmaParams &p, float4 *partials, int n0,
                                                     int m0, int warp, int lane, int rank) {
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  for (int j = rank; j < TM / 8; j += p.split_k) {
    const int at = (warp * (TM / 8) + j) * 32 + lane;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int src = 0; src < p.split_k; ++src)
      add4(sum, cluster.map_shared_rank(partials, src)[at]);
    store_fragment_column(p, sum, n0, m0, warp, lane, j);
  }
}

// A stream-K consumer's segment epilogue (all consumer threads; `ct` = thread index among
// them): store the tile (whole), hand its partial over (writer) or add the writers' partials in
// K order and store (reader). d holds the segment's sum and is left zeroed.
template <int TM, int BN, int CONSUMER_THREADS>
__device__ __forceinline__ void stream_k_segment(const TmaParams &p, const StreamK &sk,
                                                 float (&d)[TM / 2], int tile, int first_kb,
                                                 int last_kb, const TmaUnit &at, int ct) {
  const int c = static_cast<int>(blockIdx.x);
  const int warp = ct >> 5, lane = ct & 31;
  constexpr int kSlot = TM * BN / 4; // float4 per CTA slot
  const StreamK::Role role = sk.role(first_kb, last_kb);
  if (role == StreamK::Role::writer) {
    // Writer: this CTA's first segment.
    float4 *slot = reinterpret_cast<float4 *>(p.partials) + static_cast<size_t>(c) * kSlot;
#pragma unroll
    for (int j = 0; j < TM / 8; ++j)
      __stcg(slot + j * CONSUMER_THREADS + ct,
             make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    __threadfence();
    named_barrier(1, CONSUMER_THREADS);
    if (ct == 0)
      flag_release(p.flags + c, p.token);
  } else {
    if (role == StreamK::Role::reader) {
      // Reader: the writers c + 1, ... hold the rest of the tile, in K order.
      for (int w = sk.next_writer(tile, c); w >= 0; w = sk.next_writer(tile, w)) {
        if (ct == 0) {
          while (flag_acquire(p.flags + w) != p.token)
            __nanosleep(64);
          p.flags[w] = 0; // for the next launch; no one else touches it in this one
        }
        named_barrier(1, CONSUMER_THREADS);
        const float4 *slot =
            reinterpret_cast<const float4 *>(p.partials) + static_cast<size_t>(w) * kSlot;
#pragma unroll
        for (int j = 0; j < TM / 8; ++j) {
          add4(d + 4 * j, __ldcg(slot + j * CONSUMER_THREADS + ct));
        }
      }
    }
    store_fragments<TM>(p, d, at.n0, at.m0, warp, lane);
  }
#pragma unroll
  for (int r = 0; r < TM / 2; ++r)
    d[r] = 0.0f;
}

// STREAM: the stream-K kernel (grid of p.units' persistent CTAs along x, split_k = 1).
// AHEAD: at 256-deep blocks, a consumer forms the A fragments of kTmaBatchSteps steps (8) and
// issues their wgmma back to back as one commit group, forming the next batch while the group
// runs; the retired buffer is pinned live until the wait that retires it, so that ptxas cannot
// place the next batch in registers an in-flight wgmma reads (which would serialise every wgmma,
// C7513). Elsewhere (kTmaBatchSteps 1) the one-step lookahead: step s + 1's words and group
// parameters loaded and its exact integers formed (shift, prmt, lop3, hadd2) right after the
// wgmma of step s is issued, before the wait for step s - 1, the retired A buffer pinned the
// same way. Same products in the same order as the plain kernel either way.
//
// Measured on an H100 (docs/benchmark_results/2026-12-07-9 call2, time a 256-deep block, one CTA
// an SM): batches of 8 took 64 x 64 x 256 from 1.130 to 1.002 us, 128 x 64 x 256 from 1.181 to
// 1.148, 64 x 128 x 256 from 1.510 to 1.493; batches of 4 at 128-deep blocks made
// 128 x 128 x 128 slower (1.815 -> 1.867), so those keep one step. The 17-warp CTAs (WGN 4)
// spilled at batches of 2 and 4 (120 registers a thread): one step.
template <int WGN, int BK> inline constexpr int kTmaBatchSteps = WGN >= 4 || BK < 256 ? 1 : 8;

template <int TM, int WGN, int STAGES, int BK, bool STREAM, bool AHEAD, int WGK = 1>
__global__ void __launch_bounds__((4 * WGN * WGK + 1) * 32, 1)
    qmm_affine_tma_kernel(const __grid_constant__ TmaParams p) {
  static_assert(!(STREAM && WGK > 1), "no stream-K form with warpgroups along K");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = TmaLayout<TM, WGN, STAGES, BK, WGK>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int n0 = static_cast<int>(blockIdx.x) * L::kBn;
  const int m0 = static_cast<int>(blockIdx.z) * L::kTm;
  const int slice = static_cast<int>(blockIdx.y);
  const int blocks = p.k / BK;
  int kb0 = slice * blocks / p.split_k;
  int nblocks = (slice + 1) * blocks / p.split_k - kb0;
  const StreamK sk{p.units, blocks, static_cast<int>(gridDim.x)};
  if constexpr (STREAM) {
    kb0 = sk.begin(static_cast<int>(blockIdx.x)); // the CTA's first unit
    nblocks = sk.begin(static_cast<int>(blockIdx.x) + 1) - kb0;
  }
  // The i-th K block of this CTA: its tile's corner and the block.
  const auto unit = [&](int i) -> TmaUnit {
    if constexpr (STREAM) {
      const int u = kb0 + i;
      const int tile = u / blocks;
      return {(tile % p.tiles_n) * L::kBn, (tile / p.tiles_n) * L::kTm, u - tile * blocks};
    } else {
      return {n0, m0, kb0 + i};
    }
  };
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t smem_base = (raw_base + 1023u) & ~1023u;
  unsigned char *const smem = smem_raw + (smem_base - raw_base);
  uint64_t *const full = reinterpret_cast<uint64_t *>(smem + L::kBarrierOffset);
  uint64_t *const empty = full + STAGES;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, L::kConsumerWarps);
    }
    mbarrier_init_fence();
  }
  __syncthreads();

  float d[TM / 2]; // the consumer's wgmma accumulator: m16n8 C fragments of TM / 8 tiles
  if (warp == L::kConsumerWarps) {
    // Producer: weights and group parameters of the first STAGES blocks before the wait for the
    // previous kernel, their activations after it.
    if (lane == 0) {
      prefetch_tensor_map(&p.q);
      prefetch_tensor_map(&p.x);
      prefetch_tensor_map(&p.scales);
      prefetch_tensor_map(&p.biases);
      auto load_weights = [&](int i, int s) {
        const TmaUnit at = unit(i);
        const uint32_t stage = smem_base + s * L::kStage;
        const int window = ((at.kb * BK) >> p.group_shift) & ~(kParamGroups - 1);
        tma_load_2d(stage, &p.q, at.kb * (BK / 8), at.n0, full + s);
        tma_load_2d(stage + L::kWeight + L::kActivation, &p.scales, window, at.n0, full + s);
        tma_load_2d(stage + L::kWeight + L::kActivation + L::kParam, &p.biases, window, at.n0,
                    full + s);
      };
      auto load_activations = [&](int i, int s) {
        const TmaUnit at = unit(i);
        const uint32_t stage = smem_base + s * L::kStage + L::kWeight;
#pragma unroll
        for (int a = 0; a < BK / kActivationK; ++a)
          tma_load_2d(stage + a * L::kAtom, &p.x, at.kb * BK + a * kActivationK, at.m0, full + s);
      };
      const int prologue = nblocks < STAGES ? nblocks : STAGES;
      for (int i = 0; i < prologue; ++i) {
        mbarrier_arrive_expect_tx(full + i, L::kStage);
        load_weights(i, i);
      }
      pdl_wait();
      for (int i = 0; i < prologue; ++i)
        load_activations(i, i);
      StageCursor q;
      for (int i = 0; i < prologue; ++i)
        q.advance(STAGES);
      for (int i = prologue; i < nblocks; ++i) {
        mbarrier_wait(empty + q.stage, q.phase ^ 1u);
        mbarrier_arrive_expect_tx(full + q.stage, L::kStage);
        load_weights(i, q.stage);
        load_activations(i, q.stage);
        q.advance(STAGES);
      }
    }
  } else {
    // Consumers: warp w of warpgroup w / 4 holds weight rows 16 (w % 4) .. + 15 of its 64;
    // warpgroup w / 4 takes weight tile (w / 4) % WGN and K steps (w / 4) / WGN of each block.
    const int g = lane >> 2, t = lane & 3;
    // (With WGK 1 every consumer warp is below kStoreWarps: spelt out, so that the compiler
    // sees a constant first step.)
    const int row0 = (WGK > 1 ? warp % L::kStoreWarps : warp) * 16;
    constexpr int kSteps = BK / 16 / WGK; // steps of a block a warpgroup takes
    const int step0 = WGK > 1 ? (warp / L::kStoreWarps) * kSteps : 0; // its first (even)
    const uint32_t selector = static_cast<uint32_t>(t) | (static_cast<uint32_t>(4 + t) << 8);
    const int group_mask = (1 << p.group_shift) - 1;
#pragma unroll
    for (int r = 0; r < TM / 2; ++r)
      d[r] = 0.0f;
    // The A fragments, two buffers in turn: of one step each (the plain kernels and the
    // one-step lookahead), or of a batch of kTmaBatchSteps steps (AHEAD at 256-deep blocks).
    constexpr int kBatchSteps = AHEAD && WGK == 1 ? kTmaBatchSteps<WGN, BK> : 1;
    constexpr int kBatches = (BK / 16) / kBatchSteps;
    static_assert((BK / 16) % (2 * kBatchSteps) == 0,
                  "a buffer serves the same steps of every block");
    uint32_t a[2][kBatchSteps][4];
    StageCursor q;
    int previous = -1;
    int segment_kb = 0; // stream-K: the first K block of the current segment
    for (int i = 0; i < nblocks; ++i) {
      mbarrier_wait(full + q.stage, q.phase);
      const TmaUnit at = unit(i);
      const int kb = at.kb;
      if (STREAM && (i == 0 || kb == 0))
        segment_kb = kb;
      const uint32_t stage = smem_base + q.stage * L::kStage;
      const uint32_t x_stage = stage + L::kWeight;
      const uint32_t s_stage = stage + L::kWeight + L::kActivation;
      const int window = ((kb * BK) >> p.group_shift) & ~(kParamGroups - 1);
      __nv_bfloat162 sc[2], bi[2];
      // A new group starts at `step`: its scale and bias, splatted to both halves.
      const auto load_params = [&](int step) {
        const int slot = ((kb * BK + step * 16) >> p.group_shift) - window;
        const uint32_t pick = (slot & 1) ? 0x3232u : 0x1010u;
        const uint32_t pair = static_cast<uint32_t>(slot & ~1) * 2;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t row = static_cast<uint32_t>(row0 + g + 8 * h);
          const uint32_t sw = lds32(s_stage + row * (kParamGroups * 2) + pair);
          const uint32_t bw = lds32(s_stage + L::kParam + row * (kParamGroups * 2) + pair);
          uint32_t sv, bv;
          asm("prmt.b32 %0, %1, 0, %2;" : "=r"(sv) : "r"(sw), "r"(pick));
          asm("prmt.b32 %0, %1, 0, %2;" : "=r"(bv) : "r"(bw), "r"(pick));
          sc[h] = *reinterpret_cast<__nv_bfloat162 *>(&sv);
          bi[h] = *reinterpret_cast<__nv_bfloat162 *>(&bv);
        }
      };
      // Step `step`'s 16 K of the activations: its atom, 32 bytes in.
      const auto step_desc = [&](int step) {
        return activation_desc(x_stage + (step >> 2) * L::kAtom + 32 * (step & 3));
      };
      const auto issue = [&](int step, uint32_t(&f)[4]) { wgmma_issue<TM>(d, f, step_desc(step)); };
      // After the wait of the warpgroup's step `ls`: at its first step of a block every wgmma of
      // the block before it is done, and its stage goes back to the producer.
      const auto release_previous = [&](int ls) {
        if (ls == 0 && previous >= 0) {
          fence_proxy_async_shared();
          __syncwarp();
          if (lane == 0)
            mbarrier_arrive(empty + previous);
        }
      };
      // The warpgroup's step `ls` (step step0 + ls of the block): its words (a 16-byte chunk per
      // row serves two steps), its group's scale and bias at the warpgroup's first step of the
      // block and where a group starts, and its exact integers.
      uint4 words[2];
      __nv_bfloat162 ex[4];
      const auto prepare = [&](int ls) {
        const int step = step0 + ls;
        const int c = step >> 1, ss = ls & 1;
        if (ss == 0) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t row = static_cast<uint32_t>(row0 + g + 8 * h);
            words[h] = lds128(stage + L::word_offset(row, g, c));
          }
        }
        if (ls == 0 || ((step * 16) & group_mask) == 0)
          load_params(step);
        ex[0] = exact_pair(ss ? words[0].z : words[0].x, selector);
        ex[1] = exact_pair(ss ? words[1].z : words[1].x, selector);
        ex[2] = exact_pair(ss ? words[0].w : words[0].y, selector);
        ex[3] = exact_pair(ss ? words[1].w : words[1].y, selector);
      };
      if constexpr (kBatchSteps > 1) {
        // Batches of kBatchSteps steps: a batch's A fragments are formed first, then its
        // wgmma are issued back to back as one commit group, and the next batch is formed while
        // that group runs (wait_group 1 after each: one group in flight, as ptxas can follow).
#pragma unroll
        for (int b = 0; b < kBatches; ++b) {
          uint32_t(&f)[kBatchSteps][4] = a[b & 1];
#pragma unroll
          for (int u = 0; u < kBatchSteps; ++u) {
            prepare(b * kBatchSteps + u);
#pragma unroll
            for (int r = 0; r < 4; ++r) { // rows g (r even) and g + 8 (r odd)
              const __nv_bfloat162 w = __hfma2(ex[r], sc[r & 1], bi[r & 1]);
              f[u][r] = *reinterpret_cast<const uint32_t *>(&w);
            }
          }
#pragma unroll
          for (int u = 0; u < kBatchSteps; ++u)
#pragma unroll
            for (int r = 0; r < 4; ++r)
              cute::warpgroup_fence_operand(f[u][r]);
#pragma unroll
          for (int r = 0; r < TM / 2; ++r)
            cute::warpgroup_fence_operand(d[r]);
          cute::warpgroup_arrive();
#pragma unroll
          for (int u = 0; u < kBatchSteps; ++u) {
            wgmma_step<TM>(d, f[u], step_desc(b * kBatchSteps + u),
                           std::make_index_sequence<TM / 2>{});
          }
          cute::warpgroup_commit_batch();
          // The batch before this one has completed. Its A buffer stays live until here, so
          // that ptxas places nothing of the next batch in it while its wgmma may read it.
          cute::warpgroup_wait<1>();
#pragma unroll
          for (int u = 0; u < kBatchSteps; ++u)
#pragma unroll
            for (int r = 0; r < 4; ++r)
              cute::warpgroup_fence_operand(a[(b + 1) & 1][u][r]);
          release_previous(b);
        }
      } else {
        if constexpr (AHEAD)
          prepare(0);
#pragma unroll
        for (int ls = 0; ls < kSteps; ++ls) {
          if constexpr (!AHEAD)
            prepare(ls);
          uint32_t(&f)[4] = a[ls & 1][0];
#pragma unroll
          for (int r = 0; r < 4; ++r) { // rows g (r even) and g + 8 (r odd)
            const __nv_bfloat162 w = __hfma2(ex[r], sc[r & 1], bi[r & 1]);
            f[r] = *reinterpret_cast<const uint32_t *>(&w);
          }
          issue(step0 + ls, f);
          if constexpr (AHEAD)
            if (ls + 1 < kSteps)
              prepare(ls + 1);
          // The wgmma before this one has completed: its A buffer is refilled next.
          cute::warpgroup_wait<1>();
          if constexpr (AHEAD) {
            // That wgmma's A buffer stays live until here, so that ptxas places nothing of the
            // next step in it while the wgmma may still read it.
            uint32_t(&retired)[4] = a[(ls + 1) & 1][0];
#pragma unroll
            for (int r = 0; r < 4; ++r)
              cute::warpgroup_fence_operand(retired[r]);
          }
          release_previous(ls);
        }
      }
      previous = q.stage;
      q.advance(STAGES);
      if constexpr (STREAM) {
        if (sk.ends_segment(kb0 + i, i, nblocks)) {
          cute::warpgroup_wait<0>();
#pragma unroll
          for (int r = 0; r < TM / 2; ++r)
            cute::warpgroup_fence_operand(d[r]);
          stream_k_segment<TM, L::kBn, L::kConsumerWarps * 32>(p, sk, d, (kb0 + i) / blocks,
                                                               segment_kb, kb, at, tid);
#pragma unroll
          for (int r = 0; r < TM / 2; ++r)
            cute::warpgroup_fence_operand(d[r]);
        }
      }
    }
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int r = 0; r < TM / 2; ++r)
      cute::warpgroup_fence_operand(d[r]);
  }
  if constexpr (WGK > 1) {
    // The warpgroups along K add up: those of k > 0 hand their accumulators over through the
    // (now free) ring, and each warp of k = 0 adds them in k order.
    __syncthreads();
    float4 *const handed = reinterpret_cast<float4 *>(smem);
    if (warp >= L::kStoreWarps && warp < L::kConsumerWarps) {
#pragma unroll
      for (int j = 0; j < TM / 8; ++j)
        handed[((warp - L::kStoreWarps) * (TM / 8) + j) * 32 + lane] =
            make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
    }
    __syncthreads();
    if (warp < L::kStoreWarps) {
      for (int k = 1; k < WGK; ++k)
#pragma unroll
        for (int j = 0; j < TM / 8; ++j)
          add4(d + 4 * j, handed[(((k - 1) * L::kStoreWarps + warp) * (TM / 8) + j) * 32 + lane]);
    }
  }
  if constexpr (STREAM) {
    // Every segment was stored or handed over inside the loop.
    pdl_launch_dependents();
  } else if (p.split_k == 1) {
    // One K slice: each consumer stores its own fragments, with no shared-memory round trip.
    // The GEMV family's reduce below took 9-16 us a launch here (an index division, a generic
    // load and a 2-byte store per output, 8192 outputs a CTA at 128 x 64; ncu, 2026-12-07-7
    // call2), against 1.1-1.2 us a K block. 0 + x is its sum of one slice (-0 stored as +0),
    // so the bits are the same.
    pdl_launch_dependents();
    if (warp < L::kStoreWarps) {
#pragma unroll
      for (int r = 0; r < TM / 2; ++r)
        d[r] = __fadd_rn(0.0f, d[r]);
      store_fragments<TM>(p, d, n0, m0, warp, lane);
    }
  } else {
    // K slices of a cluster: every CTA's consumers hold the same outputs in the same fragment
    // places, so rank r adds, for its share of the fragment columns (j = r, r + split_k, ...),
    // the split_k partials at its own threads' places (one float4 a column and rank, through
    // distributed shared memory) in slice order from 0.0f, and stores them: the sums and bits of
    // reduce_and_store (../common/split_k_reduce.cuh), without its per-output index arithmetic,
    // which took 9-16 us a launch at one slice (ncu, 2026-12-07-7 call2).
    // Every stage has been read (the last by wgmma, waited above) before the ring holds
    // partials.
    __syncthreads();
    pdl_launch_dependents();
    float4 *const partials = reinterpret_cast<float4 *>(smem);
    if (warp < L::kStoreWarps) {
#pragma unroll
      for (int j = 0; j < TM / 8; ++j)
        partials[(warp * (TM / 8) + j) * 32 + lane] =
            make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
    }
    partials_written(p.split_k);
    if (warp < L::kStoreWarps)
      cluster_reduce_store<TM>(p, partials, n0, m0, warp, lane, slice);
    partials_read(p.split_k);
  }
#endif
}

} // namespace hone::cuda::qmm_tma_detail

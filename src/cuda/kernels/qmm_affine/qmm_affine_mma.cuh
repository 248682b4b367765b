// qmm.affine's mma path (device code): Y[m, n] = X[m, k] . dequant(W)[n, k]^T for the small
// activation tiles of decode-to-prefill (offered at 9-64 rows), on mma.sync tensor cores, from
// the affine layout as it is (int4 words along K, bf16 scales and biases [n, k / group]).
//
// The transposed problem, as on the wgmma path: weight rows on the mma's M (16 per m16 tile),
// activation rows on its N (8 per n8 tile). A CTA owns TM = 8 NT activation rows and
// BN = 16 MT WN weight rows over one K slice (split_k CTAs of a thread-block cluster take the
// slices and add their partials in slice order through distributed shared memory). Its
// WN x WK warps split the rows WN ways and each BK = 64 WK deep K block WK ways: warp
// (wn, wk) takes rows 16 MT wn .. and K 64 wk .. 64 wk + 63 of every block, and the WK
// partials are added in the epilogue. Per block, all threads copy the block's weight words
// (BN rows x BK / 2 bytes) and activations (TM rows x 2 BK bytes) into a STAGES-deep cp.async
// ring; the activations are read once per CTA from global memory, the weights once per call.
// Deeper blocks make each row's copy one longer run (128 bytes at BK 256: one L1 wavefront
// per row and block instead of four) and give each barrier WK times the mma work.
//
// Fragments, per 16-deep K step s of a block, lane (g, t):
//   B (activations): ldmatrix.x4 of the swizzled activation tile gives two n8 tiles.
//   A (weights): mma slot (row, k 2t, 2t + 1) is nibble pair t (byte t) of word 2s of that
//   row, slot (row, k 2t + 8, 2t + 9) pair t of word 2s + 1 -- the natural K order, so B needs
//   no permutation. The four lanes of a quad read the same 16 bytes (a shared-memory
//   broadcast) and each takes its byte: prmt(word, word >> 4) puts the two nibbles into the
//   low bits of the two bf16 halves, lop3 with 0x4300 makes the exact bf16 128 + q, and two
//   bf16x2 fmas give q * scale + bias rounded once to bf16 per weight (qmv.affine's per-weight
//   form).
// Scales and biases travel in the same ring: per block and weight row, one aligned window of
// each array that holds the block's group(s): 16 bytes (8 groups) where k / group is a
// multiple of 8, else 8 or 4 bytes (k / group even); the host refuses a block whose groups
// do not fit the window.
// Summation order: per output, each K slice adds its 64-deep blocks in K order in fp32 (mma),
// then the slices are added in slice order, so the result depends on (k, split_k) only.
// NOTE: every thread's copy addresses are computed once; per-block address arithmetic and a
// division by the run-time group cost more issue slots than the math in an earlier version
// (docs/notes/qmm_affine.md, "The mma path").
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/common/ptx.cuh"
#include "cuda/kernels/common/split_k_reduce.cuh"

namespace hone::cuda::qmm_mma_detail {

using namespace hone::cuda::kernel_detail;

inline constexpr int kWarpK = 64;       // K per warp per block (four 16-deep mma steps)
inline constexpr int kParamWindow = 16; // bytes per row and array reserved for the parameters

struct Params {
  const uint16_t *x = nullptr;      // bf16 [m, k]
  const uint32_t *q = nullptr;      // [n, k / 8]
  const uint16_t *scales = nullptr; // bf16 [n, k / group]
  const uint16_t *biases = nullptr; // bf16 [n, k / group]
  uint16_t *y = nullptr;            // bf16 [m, n]
  int m = 0, n = 0, k = 0, group = 64;
  int group_shift = 6;  // log2(group): 5, 6 or 7
  int param_bytes = 16; // parameter window per row and block: 16, 8 or 4 bytes
  int split_k = 1;      // K slices = CTAs of one cluster along grid.y
};

template <int NT, int MT, int WN, int WK, int STAGES> struct Layout {
  static constexpr int kTm = NT * 8;
  static constexpr int kBn = MT * 16 * WN;
  static constexpr int kBk = kWarpK * WK;
  static constexpr int kWarps = WN * WK;
  static constexpr int kThreads = kWarps * 32;
  // Weight rows padded by 16 bytes (48, 80, 144), so that the 8 rows of a quad-broadcast
  // LDS.128 fall in distinct banks; activation rows of 2 BK bytes, 16-byte pieces swizzled.
  static constexpr int kWeightPitch = kBk / 2 + 16;
  static constexpr int kActivationPitch = kBk * 2;
  static constexpr int kWeightStage = kBn * kWeightPitch;
  static constexpr int kActivationStage = kTm * kActivationPitch;
  // The scale windows of the BN rows (16 bytes each), then the bias windows.
  static constexpr int kParamStage = kBn * 2 * kParamWindow;
  static constexpr int kStage = kWeightStage + kActivationStage + kParamStage;
  static constexpr int kPipeline = STAGES * kStage;
  // fp32 partials of the epilogue (every warp's accumulators), in the ring.
  static constexpr int kPartials = kWarps * MT * NT * 128 * 4;
  static constexpr int kShared = kPipeline > kPartials ? kPipeline : kPartials;
};

// 16-byte cp.async reading `bytes` (16, or 0: zero-filled, nothing read).
__device__ __forceinline__ void copy16(uint32_t dst, const void *src, int bytes, bool weight) {
  if (weight)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(bytes)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                            uint32_t &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// bf16x2 (q_lo, q_hi), exact, of the nibble pair `selector` picks from `word`.
__device__ __forceinline__ __nv_bfloat162 exact_pair(uint32_t word, uint32_t selector) {
  uint32_t z, v;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(z) : "r"(word), "r"(word >> 4), "r"(selector));
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(v) : "r"(z), "r"(0x000f000fu), "r"(0x43004300u));
  const __nv_bfloat162 offset = __floats2bfloat162_rn(-128.0f, -128.0f);
  return __hadd2(*reinterpret_cast<__nv_bfloat162 *>(&v), offset); // 128 + q - 128
}

// bf16x2 (q_lo * s + b, q_hi * s + b) of the nibble pair `selector` picks from `word`.
__device__ __forceinline__ uint32_t dequant_pair(uint32_t word, uint32_t selector,
                                                 __nv_bfloat162 scale, __nv_bfloat162 bias) {
  __nv_bfloat162 w = __hfma2(exact_pair(word, selector), scale, bias);
  return *reinterpret_cast<uint32_t *>(&w);
}

// cp.async of one row's parameter window, `bytes` 16, 8 or 4 (uniform over the call), through
// L1: a window is re-read by every block of its groups.
__device__ __forceinline__ void copy_params(uint32_t dst, const void *src, int bytes) {
  if (bytes == 16)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
  else if (bytes == 8)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}

// The first group of the parameter window a stage holds for the BK-deep K block kb: the
// block's first group rounded down to the window (param_bytes / 2 groups, aligned in the row
// because k / group is a multiple of it).
__device__ __forceinline__ int param_window(int kb, int bk, int group_shift, int param_bytes) {
  return ((kb * bk) >> group_shift) & ~(param_bytes / 2 - 1);
}

// What one thread copies per K block, fixed for the whole call (the mma path's kernels share
// it): 16-byte pieces of weight words (BN x BK / 32 pieces), parameter windows (BN x 2) and
// 16-byte pieces of activations (TM x BK / 8). Per block only the K offset moves. L gives kBn,
// kBk, kTm, kThreads, kWeightPitch, kWeightStage and kActivationStage; `x_offset(r, piece)` is
// where piece `piece` of activation row r lies in a stage (each kernel lays them out its way).
template <class L> struct CopyPlan {
  static constexpr int kPiecesPerRow = L::kBk / 32;
  static constexpr int kXPiecesPerRow = L::kBk / 8;
  static constexpr int kWCopies = (L::kBn * kPiecesPerRow) / L::kThreads;
  static constexpr int kPCopies = (2 * L::kBn + L::kThreads - 1) / L::kThreads;
  static constexpr int kXCopies = (L::kTm * kXPiecesPerRow + L::kThreads - 1) / L::kThreads;
  static_assert(L::kBn * kPiecesPerRow == kWCopies * L::kThreads, "whole weight pieces");

  const uint32_t *w_src[kWCopies];
  uint32_t w_dst[kWCopies];
  int w_bytes[kWCopies];
  const uint16_t *p_src[kPCopies];
  uint32_t p_dst[kPCopies];
  bool p_copy[kPCopies];
  const uint16_t *x_src[kXCopies];
  uint32_t x_dst[kXCopies];
  int x_bytes[kXCopies]; // < 0: a thread past the tile's pieces copies nothing

  template <class XOffset>
  __device__ __forceinline__ CopyPlan(const Params &p, int tid, int n0, int m0, XOffset x_offset) {
    const int words_per_row = p.k / 8;
    const int kg = p.k >> p.group_shift;
#pragma unroll
    for (int j = 0; j < kWCopies; ++j) {
      const int c = tid + j * L::kThreads;
      const int r = c / kPiecesPerRow, piece = c % kPiecesPerRow;
      const int row = n0 + r;
      w_bytes[j] = row < p.n ? 16 : 0;
      w_src[j] = p.q + static_cast<size_t>(row < p.n ? row : 0) * words_per_row + piece * 4;
      w_dst[j] = r * L::kWeightPitch + piece * 16;
    }
#pragma unroll
    for (int j = 0; j < kPCopies; ++j) {
      const int c = tid + j * L::kThreads;
      const int r = (c >> 1) % L::kBn, bias = c & 1;
      p_copy[j] = c < 2 * L::kBn;
      p_src[j] = (bias ? p.biases : p.scales) + static_cast<size_t>(min(n0 + r, p.n - 1)) * kg;
      p_dst[j] =
          L::kWeightStage + L::kActivationStage + bias * L::kBn * kParamWindow + r * kParamWindow;
    }
#pragma unroll
    for (int j = 0; j < kXCopies; ++j) {
      const int c = tid + j * L::kThreads;
      const int r = c / kXPiecesPerRow, piece = c % kXPiecesPerRow;
      const int row = m0 + r;
      x_bytes[j] = c >= L::kTm * kXPiecesPerRow ? -1 : row < p.m ? 16 : 0;
      x_src[j] = p.x + static_cast<size_t>(row < p.m ? row : 0) * p.k + piece * 8;
      x_dst[j] = x_offset(r, piece);
    }
  }

  // The weight words and the parameter window of block kb into the stage at `stage`.
  __device__ __forceinline__ void copy_weights(const Params &p, uint32_t stage, int kb) const {
#pragma unroll
    for (int j = 0; j < kWCopies; ++j)
      copy16(stage + w_dst[j], w_src[j] + kb * (L::kBk / 8), w_bytes[j], true);
    const int window = param_window(kb, L::kBk, p.group_shift, p.param_bytes);
#pragma unroll
    for (int j = 0; j < kPCopies; ++j)
      if (p_copy[j])
        copy_params(stage + p_dst[j], p_src[j] + window, p.param_bytes);
  }

  // The activations of block kb into the stage at `stage`.
  __device__ __forceinline__ void copy_activations(uint32_t stage, int kb) const {
#pragma unroll
    for (int j = 0; j < kXCopies; ++j)
      if (x_bytes[j] >= 0)
        copy16(stage + x_dst[j], x_src[j] + kb * L::kBk, x_bytes[j], false);
  }
};

// The warp's 64-deep quarter (K 64 wk ..) of one K block from ring stage `stage`: its MT m16
// tiles x NT n8 tiles. `slot` is the parameter slot (group - window start) of the quarter's
// first 32 K; at group 32 the second 32 K read slot + 1 (same aligned pair).
template <class L, int NT, int MT>
__device__ __forceinline__ void mma_block(uint32_t stage, int slot, bool group32, int row0, int wk,
                                          int g, int lane, uint32_t selector,
                                          float (&acc)[MT][NT][4]) {
  const uint32_t x_stage = stage + L::kWeightStage;
  const uint32_t p_stage = x_stage + L::kActivationStage;
  // Scale and bias words (an aligned bf16 pair holding the slot) of rows g and g + 8 of each
  // m16 tile, and which bf16 of the pair each half of the quarter takes.
  const uint32_t pair = static_cast<uint32_t>(slot & ~1) * 2;
  uint32_t sw[MT][2], bw[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t row = static_cast<uint32_t>(row0 + mt * 16 + g + 8 * h);
      sw[mt][h] = lds32(p_stage + row * kParamWindow + pair);
      bw[mt][h] = lds32(p_stage + L::kBn * kParamWindow + row * kParamWindow + pair);
    }
  const uint32_t pick0 = (slot & 1) ? 0x3232u : 0x1010u;
  const uint32_t pick1 = group32 ? 0x3232u : pick0;
  // ldmatrix row address of this lane inside an activation stage: matrix j = lane / 8 is (n8
  // tile 2 i + j / 2, K half j % 2) of a pair of n8 tiles; row r = lane % 8.
  const int lm_row = ((lane >> 4) << 3) + (lane & 7); // + 16 i
  const int lm_half = (lane >> 3) & 1;
#pragma unroll
  for (int half = 0; half < 2; ++half) { // words 4 half .. 4 half + 3: K steps 2 half, +1
    uint4 words[MT][2];
    __nv_bfloat162 sc[MT][2], bi[MT][2];
    const uint32_t pick = half ? pick1 : pick0;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        words[mt][h] = lds128(stage + (row0 + mt * 16 + g + 8 * h) * L::kWeightPitch +
                              wk * (kWarpK / 2) + half * 16);
        // prmt splats the chosen bf16 of a pair into both halves.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t sv, bv;
        asm("prmt.b32 %0, %1, 0, %2;" : "=r"(sv) : "r"(sw[mt][h]), "r"(pick));
        asm("prmt.b32 %0, %1, 0, %2;" : "=r"(bv) : "r"(bw[mt][h]), "r"(pick));
        sc[mt][h] = *reinterpret_cast<__nv_bfloat162 *>(&sv);
        bi[mt][h] = *reinterpret_cast<__nv_bfloat162 *>(&bv);
      }
    }
#pragma unroll
    for (int ss = 0; ss < 2; ++ss) {
      const int step = 2 * half + ss;
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const uint32_t w0g = ss ? words[mt][0].z : words[mt][0].x;
        const uint32_t w1g = ss ? words[mt][0].w : words[mt][0].y;
        const uint32_t w0h = ss ? words[mt][1].z : words[mt][1].x;
        const uint32_t w1h = ss ? words[mt][1].w : words[mt][1].y;
        a[mt][0] = dequant_pair(w0g, selector, sc[mt][0], bi[mt][0]);
        a[mt][1] = dequant_pair(w0h, selector, sc[mt][1], bi[mt][1]);
        a[mt][2] = dequant_pair(w1g, selector, sc[mt][0], bi[mt][0]);
        a[mt][3] = dequant_pair(w1h, selector, sc[mt][1], bi[mt][1]);
      }
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        const int r = np * 16 + lm_row;
        const int chunk = wk * (kWarpK / 8) + 2 * step + lm_half;
        uint32_t b0, b1, b2, b3;
        ldmatrix_x4(x_stage + r * L::kActivationPitch + ((chunk ^ (r & 7)) << 4), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_m16n8k16(acc[mt][2 * np], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b0, b1);
          mma_m16n8k16(acc[mt][2 * np + 1], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b2, b3);
        }
      }
    }
  }
}

// MIN_BLOCKS: the CTAs per SM the register budget is set for (__launch_bounds__).
template <int NT, int MT, int WN, int WK, int STAGES, int MIN_BLOCKS>
__global__ void __launch_bounds__(WN *WK * 32, MIN_BLOCKS) qmm_affine_mma_kernel(const Params p) {
  using L = Layout<NT, MT, WN, WK, STAGES>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wn = warp % WN, wk = warp / WN;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = static_cast<int>(blockIdx.x) * L::kBn;
  const int m0 = static_cast<int>(blockIdx.z) * L::kTm;
  const int slice = static_cast<int>(blockIdx.y);
  const int blocks = p.k / L::kBk;
  const int kb0 = slice * blocks / p.split_k;
  const int kb1 = (slice + 1) * blocks / p.split_k;
  const int nblocks = kb1 - kb0;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  // Activation rows of 2 BK bytes, 16-byte pieces swizzled by row for ldmatrix.
  const CopyPlan<L> plan(p, tid, n0, m0, [](int r, int piece) {
    return static_cast<uint32_t>(L::kWeightStage + r * L::kActivationPitch +
                                 ((piece ^ (r & 7)) << 4));
  });
  static_assert(CopyPlan<L>::kWCopies == MT, "one weight piece per m16 tile");
  auto copy_weights = [&](int kb, int stage) {
    plan.copy_weights(p, smem_base + stage * L::kStage, kb);
  };
  auto copy_activations = [&](int kb, int stage) {
    plan.copy_activations(smem_base + stage * L::kStage, kb);
  };

  // The weights and group parameters of the first STAGES - 1 blocks before the wait for the
  // previous kernel.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s)
    if (s < nblocks)
      copy_weights(kb0 + s, s);
  pdl_wait();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nblocks)
      copy_activations(kb0 + s, s);
    copy_async_commit();
  }

  float acc[MT][NT][4];
  zero_accumulators<MT, NT>(acc);

  const uint32_t selector = static_cast<uint32_t>(t) | (static_cast<uint32_t>(4 + t) << 8);
  const bool group32 = p.group_shift == 5;
  const int row0 = wn * MT * 16;
  // Unrolled by STAGES, so that the ring stage of block i is the compile-time j.
  for (int i0 = 0; i0 < nblocks; i0 += STAGES) {
#pragma unroll
    for (int j = 0; j < STAGES; ++j) {
      const int i = i0 + j;
      if (i >= nblocks)
        break;
      copy_async_wait<STAGES - 2>();
      __syncthreads();
      // Refill the stage freed at the previous block.
      const int refill = (j + STAGES - 1) % STAGES; // a constant once unrolled
      if (i + STAGES - 1 < nblocks) {
        copy_weights(kb0 + i + STAGES - 1, refill);
        copy_activations(kb0 + i + STAGES - 1, refill);
      }
      copy_async_commit();
      const int kb = kb0 + i;
      const int slot = ((kb * L::kBk + wk * kWarpK) >> p.group_shift) -
                       param_window(kb, L::kBk, p.group_shift, p.param_bytes);
      mma_block<L, NT, MT>(smem_base + j * L::kStage, slot, group32, row0, wk, g, lane, selector,
                           acc);
    }
  }
  copy_async_wait<0>();
  __syncthreads(); // the ring is free: it becomes the partials
  pdl_launch_dependents();

  // The GEMV family's epilogue: the m16n8 accumulators tile by tile into the (now free) ring,
  // then the WK x split_k partials of each output added in slice order across the cluster.
  struct {
    int rows, n, warps_n, warps_k, split_k;
    uint16_t *y;
  } const out{p.m, p.n, WN, WK, p.split_k, p.y};
  store_mma_partials_and_reduce_fragments<MT, NT>(out, reinterpret_cast<float4 *>(smem), acc, warp,
                                                  lane, n0, m0);
}

} // namespace hone::cuda::qmm_mma_detail

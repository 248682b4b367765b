// qmv.affine device code: the tensor-core kernel over weights dequantised in registers.
// Included only by qmv_affine.cu.
//
// Work split as in gemv.bf16 (../gemv_bf16/gemv_bf16.cuh): a CTA holds warps_n x warps_k
// warps, split_k CTAs of one thread-block cluster take further K slices, every warp sums its
// contiguous K slice in increasing K, and the cluster adds the k_slices = warps_k x split_k
// fp32 partials in slice order (../common/split_k_reduce.cuh). The summation order of an
// output depends on (bits, k, k_slices) alone, never on rows or the CTA shape.
//
// Fragments. mma.sync m16n8k16 with weight rows on M and activation rows on N. K is walked in
// chunks of 4 x 4 packed words per weight row (128 values at 4 bits, 64 at 8 bits): lane
// (g = lane / 4, t = lane % 4) loads 16 bytes, words 4t..4t+3 of the chunk, of weight rows
// g and g + 8, so one warp instruction reads 64 contiguous bytes of each of 8 rows. The
// lane's four words are its K range; mma needs 4 values of each row per k16 step, and A and
// B only have to agree on which K each register pair holds, so no shuffle, ldmatrix or
// shared staging is needed:
//   4 bits: a word holds K offsets 0..7; step 0 uses the value pairs (0, 4) and (1, 5), step
//           1 uses (2, 6) and (3, 7). A nibble pair becomes a bf16x2 with one lop3 (the
//           nibbles land in the mantissas of 128.0, giving 128 + q exactly), one bf16x2 fma
//           to subtract 128 (exact) and one bf16x2 fma with (scale, bias): one rounding to
//           bf16 per weight. The activations' pairs (x0, x4), ... are one prmt each.
//   8 bits: a word holds K offsets 0..3 and feeds one step, pairs (0, 1) and (2, 3). A byte
//           becomes the float 2^23 + q with one prmt, then q * scale + bias in fp32, and two
//           floats one bf16x2 (cvt.rn): again one rounding to bf16 per weight.
// A lane's K range lies inside one quantisation group (groups are >= 32 values and aligned),
// so each lane needs one scale and one bias per weight row and chunk. In the two-group chunks
// (int4 g64, LaneRuns, not yet the default) lane t holds words 2t, 2t + 1 and 8 + 2t, 9 + 2t
// instead, so that each mma's K values lie in one group, and two parameters per row and chunk.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/common/ptx.cuh"
#include "cuda/kernels/common/register_pipeline.cuh"
#include "cuda/kernels/common/split_k_reduce.cuh"
#include "cuda/kernels/common/weight_stream.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"
#include "cuda/kernels/rmsnorm/rmsnorm_row.cuh"

namespace hone::cuda::qmv_affine_detail {

using namespace kernel_detail; // NOLINT: the shared PTX helpers and reduction

struct Params {
  const uint16_t *x;      // bf16 [rows, k]
  const uint32_t *q;      // [n, k * bits / 32]
  const uint16_t *scales; // bf16 [n, k / group]
  const uint16_t *biases; // bf16 [n, k / group]
  uint16_t *y;            // bf16 [rows, n]
  int rows, n, k;
  int groups_per_row; // k / group
  int group_shift;    // log2(group)
  int warps_n, warps_k, split_k;
  int slice_chunks; // chunks per K slice
  int factored;     // 1: group >= chunk, scales applied per chunk to exact-integer products
  int rows_per_cta; // grouped path: activation rows per CTA (grid.z row groups)
  int silu_inter;   // the SILU mma kernels' y is [rows, silu_inter], n = 2 silu_inter
                    // (split_k_reduce.cuh); the others ignore it
  int staged_words; // parameter-vector kernels: 32-bit words a weight row takes in each warp's
                    // staged parameters (staged_words, qmv_affine.cu), after the partials; 0: none
};

// The NORM twins' parameters: Params and the rmsnorm of y's rows (norm.x = y). Kept out of Params:
// with the norm inside it, the 32-row kernels at the register cap (the factored two-tile ones and
// the two-group J 2 one, 255 registers) spilled 20 bytes (ptxas, sm_90), which they did not
// with Params as it is.
struct NormParams : Params {
  rmsnorm_row::GridRowsNorm norm;
};
template <bool NORM> using KernelParams = std::conditional_t<NORM, NormParams, Params>;

template <int BITS> struct Layout {
  static constexpr int kValuesPerWord = 32 / BITS;
  static constexpr int kLaneK = 4 * kValuesPerWord; // K values of one lane per chunk
  static constexpr int kChunkK = 4 * kLaneK;        // 128 (4 bits) or 64 (8 bits)
  static constexpr int kXVectors = kLaneK / 8;      // 16-byte activation loads per lane
};

// d = a * b + c on bf16x2, rounded once.
__device__ __forceinline__ uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

constexpr uint32_t kBf16x2Magic = 0x43004300u;      // (128.0, 128.0)
constexpr uint32_t kBf16x2One = 0x3f803f80u;        // (1.0, 1.0)
constexpr uint32_t kBf16x2MinusMagic = 0xc300c300u; // (-128.0, -128.0)

// Values i and i + 4 of a 4-bit word as the exact bf16x2 (q_i, q_{i+4}).
template <int I> __device__ __forceinline__ uint32_t int4_pair(uint32_t word) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" // (a & b) | c
      : "=r"(r)
      : "r"(word >> (4 * I)), "r"(0x000f000fu), "r"(kBf16x2Magic));
  return fma_bf16x2(r, kBf16x2One, kBf16x2MinusMagic);
}

// Values i and i + 4 of a 4-bit word as the exact bf16x2 (128 + q_i, 128 + q_{i+4}).
template <int I> __device__ __forceinline__ uint32_t int4_offset_pair(uint32_t word) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;"
      : "=r"(r)
      : "r"(word >> (4 * I)), "r"(0x000f000fu), "r"(kBf16x2Magic));
  return r;
}

// The activation pairs (x0, x4), (x1, x5), (x2, x6), (x3, x7) of 8 values (one 4-bit word's K
// offsets), each one prmt; with the 4-bit pairs' order below they are mma B fragments.
__device__ __forceinline__ void int4_activation_pairs(const uint4 &x, uint32_t (&xb)[4]) {
  xb[0] = __byte_perm(x.x, x.z, 0x5410);
  xb[1] = __byte_perm(x.x, x.z, 0x7632);
  xb[2] = __byte_perm(x.y, x.w, 0x5410);
  xb[3] = __byte_perm(x.y, x.w, 0x7632);
}

// One 4-bit word per weight row (w0: row g, w1: row g + 8) as the exact integers 128 + q, times
// the activation pairs of each n8 tile: part[nt] += A B, two k16 steps.
template <int NT>
__device__ __forceinline__ void mma_int4_offset_word(float (&part)[NT][4], uint32_t w0,
                                                     uint32_t w1, const uint32_t (&xb)[NT][4]) {
  const uint32_t a00 = int4_offset_pair<0>(w0), a01 = int4_offset_pair<1>(w0);
  const uint32_t a02 = int4_offset_pair<2>(w0), a03 = int4_offset_pair<3>(w0);
  const uint32_t a10 = int4_offset_pair<0>(w1), a11 = int4_offset_pair<1>(w1);
  const uint32_t a12 = int4_offset_pair<2>(w1), a13 = int4_offset_pair<3>(w1);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    mma_m16n8k16(part[nt], a00, a10, a01, a11, xb[nt][0], xb[nt][1]);
    mma_m16n8k16(part[nt], a02, a12, a03, a13, xb[nt][2], xb[nt][3]);
  }
}

// xsum += the column sums of the activation pairs (an all-ones A), two k16 steps.
__device__ __forceinline__ void mma_activation_sums(float (&xsum)[4], const uint32_t (&xb)[4]) {
  mma_m16n8k16(xsum, kBf16x2One, kBf16x2One, kBf16x2One, kBf16x2One, xb[0], xb[1]);
  mma_m16n8k16(xsum, kBf16x2One, kBf16x2One, kBf16x2One, kBf16x2One, xb[2], xb[3]);
}

// One 4-bit chunk on the exact integers: part[mt][nt] = sum over the lane's 4 words of
// (128 + q) x, and xsum[nt] = sum of x, both from zero (x: the chunk's 4 activation vectors of
// each n8 tile; q: rows g and g + 8 of each m16 tile).
// Sets a factored chunk's partials and activation sums to 0.
template <int MT, int NT>
__device__ __forceinline__ void zero_chunk(float (&part)[MT][NT][4], float (&xsum)[NT][4]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      xsum[nt][i] = 0.0f;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        part[mt][nt][i] = 0.0f;
    }
}

// Words [W0, W0 + NW) of the lane's four only (a chunk of two groups: one group's words).
template <int MT, int NT, int W0 = 0, int NW = 4>
__device__ __forceinline__ void mma_int4_offset_chunk(float (&part)[MT][NT][4],
                                                      float (&xsum)[NT][4], const uint4 (&x)[NT][4],
                                                      const uint4 (&q)[MT][2]) {
  zero_chunk(part, xsum);
#pragma unroll
  for (int wi = W0; wi < W0 + NW; ++wi) {
    uint32_t xb[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      int4_activation_pairs(x[nt][wi], xb[nt]);
      mma_activation_sums(xsum[nt], xb[nt]);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      mma_int4_offset_word(part[mt], (&q[mt][0].x)[wi], (&q[mt][1].x)[wi], xb);
  }
}

// Bytes I and I + 1 of an 8-bit word as the exact bf16x2 (q_I, q_{I+1}) (integers up to 256
// are exact in bf16).
template <int I> __device__ __forceinline__ uint32_t int8_exact_pair(uint32_t word) {
  constexpr float kMagic = 8388608.0f;
  const float lo = __uint_as_float(__byte_perm(word, 0x4b000000u, 0x7650 | I)) - kMagic;
  const float hi = __uint_as_float(__byte_perm(word, 0x4b000000u, 0x7650 | (I + 1))) - kMagic;
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t *>(&v);
}

// q * scale + bias for two 8-bit values (bytes I and I + 1 of `word`), as a bf16x2.
template <int I>
__device__ __forceinline__ uint32_t int8_pair(uint32_t word, float scale, float bias) {
  constexpr float kMagic = 8388608.0f; // 2^23: byte b placed in the mantissa reads 2^23 + b
  const float lo = __uint_as_float(__byte_perm(word, 0x4b000000u, 0x7650 | I)) - kMagic;
  const float hi = __uint_as_float(__byte_perm(word, 0x4b000000u, 0x7650 | (I + 1))) - kMagic;
  const __nv_bfloat162 v = __floats2bfloat162_rn(fmaf(lo, scale, bias), fmaf(hi, scale, bias));
  return *reinterpret_cast<const uint32_t *>(&v);
}

// Packed weights, scales and biases of one chunk for one lane: weight rows g and g + 8 of
// each of the warp's MT tiles.
template <int MT> struct WeightFragment {
  uint4 q[MT][2];
  uint32_t scale[MT][2]; // bf16 bits in the low half (grouped path: the scales of the lane's two
                         // columns' groups, low and high half)
  uint32_t bias[MT][2];
};

// The dequantisation a chunk takes (mma_chunk's GROUPS): 0, per weight (any group); 1, factored
// with one group per chunk (group >= chunk); 2, factored with two groups per chunk (4 bits, group
// 64, K a multiple of the chunk), the lane's words in two runs (LaneRuns).

// Which words of a chunk's row a lane holds. One run (GROUPS 0 and 1): words 4t..4t+3. Two runs
// (GROUPS 2): words 2t, 2t+1 of the first group and 8 + 2t, 9 + 2t of the second, so that every
// mma's 16 K values (word wi of each of the quad's four lanes) lie in one group and its
// exact-integer partial takes that group's scale. Activations follow the same K values.
template <int BITS, int GROUPS> struct LaneRuns {
  static constexpr int kRuns = GROUPS == 2 ? 2 : 1;
  static constexpr int kRunWords = 4 / kRuns;        // words of one run
  static constexpr int kRunStrideWords = 16 / kRuns; // from one run's first word to the next's
  static constexpr int kRunValues = kRunWords * Layout<BITS>::kValuesPerWord;
  static constexpr int kRunStrideValues = kRunStrideWords * Layout<BITS>::kValuesPerWord;
  static constexpr int kRunXVectors = Layout<BITS>::kXVectors / kRuns;
  // K, within the row, of the lane's first value of chunk `chunk` (of its first run): its group
  // is this >> log2(group).
  static constexpr __device__ __forceinline__ int first_k(int chunk, int t) {
    return chunk * Layout<BITS>::kChunkK + (kRuns == 1 ? Layout<BITS>::kLaneK * t : 0);
  }
  // K offset in a chunk of the lane's activation vector v (8 values), past its first value.
  static constexpr __device__ __forceinline__ int x_offset(int v) {
    return (v / kRunXVectors) * kRunStrideValues + (v % kRunXVectors) * 8;
  }
};

// Lane t's four words of one chunk of a weight row in global memory, `qp` at the chunk's first
// word of the lane (the row's + LaneRuns::kRunWords x t): one 16-byte load, or one 8-byte load
// per run.
template <int BITS, int GROUPS>
__device__ __forceinline__ uint4 load_lane_words(const uint32_t *qp) {
  using R = LaneRuns<BITS, GROUPS>;
  if constexpr (R::kRuns == 1) {
    return load_weight(qp);
  } else {
    const uint2 a = load_weight_half(qp), b = load_weight_half(qp + R::kRunStrideWords);
    return make_uint4(a.x, a.y, b.x, b.y);
  }
}

// The mma kernel's register pipeline (S = 0) compiles to 7-13 % fewer instructions with 32-bit
// load offsets (lane_row_offsets) and with fragments alternating between two sets
// (register_pipeline's PING_PONG), but together they measured slower on an H100
// (docs/benchmark_results/2026-12-05-h100-2): 3-5 % at rows 1-8 on 4096 x 14336, and the rows-1
// pick of 28672 x 4096 (outputs_per_warp 32) 3-9 %. Off until each alone measures faster; the
// grouped kernels keep their offsets.
inline constexpr bool kQmvMmaOffsets32 = false;
inline constexpr bool kQmvMmaPingPong = false;
// The register pipeline of the 4-bit kernels of two or more activation tiles (16 and 32 rows,
// no parameter vectors) reads each block of J chunks from row pointers that advance J chunks a
// block (qmv_affine_mma_kernel's `kCursor`), each chunk of the block at a fixed offset from
// them, and with the unguarded activation look-ahead. From the row offsets nvcc rebuilt every
// load's 64-bit address each chunk, and each guarded activation load re-read p.x and zero-filled:
// `<4, 2, 2, 2>`'s two-chunk loop took 942 instructions, 784 with the cursor; `<4, 2, 2, 1>` 506
// and 424 per weight, 425 and 360 factored (nvdisasm). Per weight (group 32, 64, 128), and
// factored at J 1 and at most four m16 x n8 tiles (more spilled 4-120 bytes). The same loads,
// so the same bits. Timed on an H100 against the build before (docs/benchmark_results/
// 2026-12-06-h100-7, call1): the 16- and 32-row defaults 0.96-0.98 of their time on 28672 x 4096
// and 4096 x 14336 at g64, geomean 0.995 over the 24 default cells; config by config 0.68-1.72,
// the four-warp CTAs at more registers fitting fewer an SM.
inline constexpr bool kQmvMmaCursor = true;
// The cursor kernels' fragments alternating between two sets (register_pipeline's PING_PONG)
// where they do not spill (fewer than eight m16 x n8 tiles): the 16-row loops lose another 5-12 %
// of their instructions (nvdisasm), at 210-249 registers, but the defaults took 1.005 of the
// time (geomean), up to 1.038, in the same call. Off.
inline constexpr bool kQmvMmaCursorPingPong = false;
// The cursor loads in the kernels of one activation tile too (rows 1-8) where they have no
// parameter vectors (per weight at J 1; factored at J 1, 2 and 4 with at most two m16 tiles),
// and in the factored two-tile kernels at J 2 of one activation tile. Their loops lose 19-23 %
// of their instructions (nvdisasm: `<4, 1, 1, 1>` 252 -> 205 per weight and 203 -> 164
// factored, `<4, 1, 2, 2>` factored 619 -> 503, `<4, 1, 1, 2>` factored 383 -> 293), at 98, 214
// and 134 registers, no spills. Measured on an H100 (docs/benchmark_results/2026-12-06-h100-8):
// the int4 g128 defaults at rows 1-8 took 0.924-0.963 of their time on 28672 x 4096 and
// 4096 x 14336; the int4 g64 defaults 0.994-1.006. On.
inline constexpr bool kQmvMmaCursorOneTile = true;
// The register pipeline two blocks deep (register_pipeline_deep) is the DEEP twin of the staged
// per-weight 4-bit J 2 kernel of one m16 tile (`deep=2`, a tuning candidate;
// QmvAffineConfig::deep): block i + 2's words requested while block i is multiplied, each chunk's
// group parameters read from shared memory at use, so that the three fragment sets hold words only
// (127 registers against 122, no spills). Where the warp's slice holds at least
// kQmvAffineDeepMinChunks chunks; shorter slices keep register_pipeline. Same chunks, same order:
// the same bits. It is a tactic, not the default, because the two Hopper parts disagree on it: on
// an H200 the int4 g64 default of 28672 x 4096 took 0.970 / 0.972 / 0.971 / 1.003 of its time at
// rows 1 / 2 / 4 / 8 with it (docs/benchmark_results/2026-12-06-9, call3), on an H100 1.039 / 1.041
// / 1.039 / 1.027 and the int4 g64 decode step 1.008 (docs/benchmark_results/2026-12-07, call1). At
// 8-16 chunks a slice it lost 3-5 % on the H200, hence the floor. Three blocks of words ahead
// instead of two in the DEEP twins: 1.09-1.11 of the two-block time on an H100
// (docs/benchmark_results/2026-12-07, call1). Off.
inline constexpr bool kQmvMmaDeeper = false;

// 32-bit element offsets of the lane's weight rows (g and g + 8 of each m16 tile from m_warp,
// clamped to the last row): each row's first word plus `word`, and its first group parameter
// plus `param`. From these an address is one LEA pair off the array's base, where from 64-bit
// row pointers nvcc recomputed every chunk's addresses in 64 bits, 4-5 instructions a load (SASS).
// REQUIRES: n x k x bits / 32 < 2^31 (qmv_affine_offsets_fit, which the launcher checks).
template <int MT, bool SILU = false>
__device__ __forceinline__ void lane_row_offsets(uint32_t (&qo)[MT][2], uint32_t (&po)[MT][2],
                                                 const Params &p, int words_per_row, int m_warp,
                                                 int g, uint32_t word, uint32_t param) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t row = static_cast<uint32_t>(weight_row<SILU>(p, m_warp + mt * 16 + h * 8 + g));
      qo[mt][h] = row * static_cast<uint32_t>(words_per_row) + word;
      po[mt][h] = row * static_cast<uint32_t>(p.groups_per_row) + param;
    }
}

// One group parameter (bf16 bits in the low half), through L1: the row's next groups are in the
// same line, read again by the next chunks. (Asking L2 for the 256 bytes around each, as the
// weight loads do, measured the same on an H100: docs/benchmark_results/2026-12-06-h100, call2.)
__device__ __forceinline__ uint32_t load_parameter(const uint16_t *p) { return __ldg(p); }

// The group parameters (scale or bias) of a two-run chunk's two groups, p[0] and p[1], as one
// word: the first run's in the low half, the second's in the high half (little-endian). One
// 32-bit load: a two-run chunk's first group is even (2 x chunk) and K is a multiple of the
// chunk, so p is 4-byte aligned wherever the arrays are, which the launchers require
// (qmv_affine_parameter_pairs_aligned). Two 2-byte loads and a prmt before: at two m16 tiles the
// parameters were 16 of a lane's 24 loads a chunk.
__device__ __forceinline__ uint32_t load_parameter_pair(const uint16_t *p) {
  return __ldg(reinterpret_cast<const uint32_t *>(p));
}

// J consecutive parameter pairs (each the two groups of one int4 g64 chunk, load_parameter_pair)
// in one vector load: J x 4 bytes from a (J x 4)-byte aligned p.
template <int J>
__device__ __forceinline__ void load_parameter_pairs(const uint16_t *p, uint32_t (&w)[J]) {
  if constexpr (J == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (J == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int j = 0; j < J; ++j)
      w[j] = load_parameter_pair(p + 2 * j);
  }
}

// A factored chunk's group applied to the accumulators, in fp32: acc += s part + (b - offset s)
// xsum, with the group's scale s and bias b the bf16 in the low (HIGH false) or high half of
// `f`'s parameter words and `offset` what the exact integers carry (128 + q at 4 bits).
template <int MT, int NT, bool HIGH>
__device__ __forceinline__ void apply_group(float (&acc)[MT][NT][4], const float (&part)[MT][NT][4],
                                            const float (&xsum)[NT][4], const WeightFragment<MT> &f,
                                            float offset) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float sc = HIGH ? bf16_hi(f.scale[mt][h]) : bf16_lo(f.scale[mt][h]);
      const float bi = fmaf(-offset, sc, HIGH ? bf16_hi(f.bias[mt][h]) : bf16_lo(f.bias[mt][h]));
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 2 * h; i < 2 * h + 2; ++i)
          acc[mt][nt][i] = fmaf(bi, xsum[nt][i], fmaf(sc, part[mt][nt][i], acc[mt][nt][i]));
    }
}

// One chunk into the m16n8 accumulators: the weights of `f` dequantised in registers (per weight,
// or factored: exact integers with the group applied per accumulator), times the chunk's
// activations `x`. The mma path's whole arithmetic, and so its summation order: every kernel
// that feeds a K slice's chunks through it in increasing K gets the same bits.
// `half` is the byte_perm selector that takes the chunk's scale and bias out of f's parameter
// words. Per weight at 4 bits: 0x1010, the low half (one parameter a word); 0x3232, the high half
// (a pair of groups a word, kQmvParameterVectors, for the lanes of the chunk's second group).
// The factored forms take the low half (GROUPS 1) or both (GROUPS 2).
template <int BITS, int NT, int MT, int GROUPS>
__device__ __forceinline__ void mma_chunk(float (&acc)[MT][NT][4], const WeightFragment<MT> &f,
                                          const uint4 (&x)[NT][Layout<BITS>::kXVectors],
                                          uint32_t half = 0x1010) {
  if constexpr (GROUPS == 2) {
    static_assert(BITS == 4, "two groups per chunk: 4 bits only");
    // Group 0 (the lane's words 0 and 1), then group 1 (words 2 and 3), each as the one-group
    // chunk below; scale and bias of group i in the low (i = 0) or high half.
    float part[MT][NT][4], xsum[NT][4];
    mma_int4_offset_chunk<MT, NT, 0, 2>(part, xsum, x, f.q);
    apply_group<MT, NT, false>(acc, part, xsum, f, 128.0f);
    mma_int4_offset_chunk<MT, NT, 2, 2>(part, xsum, x, f.q);
    apply_group<MT, NT, true>(acc, part, xsum, f, 128.0f);
  } else if constexpr (GROUPS == 1) {
    // One quantisation group per chunk: the mma runs on the exact integers (128 + q at 4
    // bits, q at 8 bits) and the group's scale and bias are applied once per accumulator
    // in fp32: sum_k x (q s + b) = s sum_k x q' + (b - o s) sum_k x, with q' = q + o. The
    // activation sums come from a second mma with an all-ones A.
    float part[MT][NT][4], xsum[NT][4];
    if constexpr (BITS == 4) {
      mma_int4_offset_chunk(part, xsum, x, f.q);
    } else {
      zero_chunk(part, xsum);
#pragma unroll
      for (int wi = 0; wi < 4; ++wi) {
        uint32_t xb[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint4 &v = x[nt][wi / 2];
          xb[nt][0] = wi % 2 == 0 ? v.x : v.z;
          xb[nt][1] = wi % 2 == 0 ? v.y : v.w;
          mma_m16n8k16(xsum[nt], kBf16x2One, kBf16x2One, kBf16x2One, kBf16x2One, xb[nt][0],
                       xb[nt][1]);
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const uint32_t w0 = (&f.q[mt][0].x)[wi];
          const uint32_t w1 = (&f.q[mt][1].x)[wi];
          const uint32_t a0 = int8_exact_pair<0>(w0), a2 = int8_exact_pair<2>(w0);
          const uint32_t a1 = int8_exact_pair<0>(w1), a3 = int8_exact_pair<2>(w1);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            mma_m16n8k16(part[mt][nt], a0, a1, a2, a3, xb[nt][0], xb[nt][1]);
        }
      }
    }
    apply_group<MT, NT, false>(acc, part, xsum, f, BITS == 4 ? 128.0f : 0.0f);
  } else {
    if constexpr (BITS == 4) {
      uint32_t s2[MT][2], b2[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          s2[mt][h] = __byte_perm(f.scale[mt][h], 0, half);
          b2[mt][h] = __byte_perm(f.bias[mt][h], 0, half);
        }
#pragma unroll
      for (int wi = 0; wi < 4; ++wi) {
        uint32_t xb[NT][4]; // activation pairs (0,4), (1,5), (2,6), (3,7) of word wi
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          int4_activation_pairs(x[nt][wi], xb[nt]);
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const uint32_t w0 = (&f.q[mt][0].x)[wi];
          const uint32_t w1 = (&f.q[mt][1].x)[wi];
          uint32_t a[2][4]; // [h][pair]
          a[0][0] = fma_bf16x2(int4_pair<0>(w0), s2[mt][0], b2[mt][0]);
          a[0][1] = fma_bf16x2(int4_pair<1>(w0), s2[mt][0], b2[mt][0]);
          a[0][2] = fma_bf16x2(int4_pair<2>(w0), s2[mt][0], b2[mt][0]);
          a[0][3] = fma_bf16x2(int4_pair<3>(w0), s2[mt][0], b2[mt][0]);
          a[1][0] = fma_bf16x2(int4_pair<0>(w1), s2[mt][1], b2[mt][1]);
          a[1][1] = fma_bf16x2(int4_pair<1>(w1), s2[mt][1], b2[mt][1]);
          a[1][2] = fma_bf16x2(int4_pair<2>(w1), s2[mt][1], b2[mt][1]);
          a[1][3] = fma_bf16x2(int4_pair<3>(w1), s2[mt][1], b2[mt][1]);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            mma_m16n8k16(acc[mt][nt], a[0][0], a[1][0], a[0][1], a[1][1], xb[nt][0], xb[nt][1]);
            mma_m16n8k16(acc[mt][nt], a[0][2], a[1][2], a[0][3], a[1][3], xb[nt][2], xb[nt][3]);
          }
        }
      }
    } else {
      float s[MT][2], b[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          s[mt][h] = __uint_as_float(f.scale[mt][h] << 16);
          b[mt][h] = __uint_as_float(f.bias[mt][h] << 16);
        }
#pragma unroll
      for (int wi = 0; wi < 4; ++wi) {
        uint32_t xb[NT][2]; // activation pairs (0,1), (2,3) of word wi
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint4 &v = x[nt][wi / 2];
          xb[nt][0] = wi % 2 == 0 ? v.x : v.z;
          xb[nt][1] = wi % 2 == 0 ? v.y : v.w;
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const uint32_t w0 = (&f.q[mt][0].x)[wi];
          const uint32_t w1 = (&f.q[mt][1].x)[wi];
          const uint32_t a0 = int8_pair<0>(w0, s[mt][0], b[mt][0]);
          const uint32_t a2 = int8_pair<2>(w0, s[mt][0], b[mt][0]);
          const uint32_t a1 = int8_pair<0>(w1, s[mt][1], b[mt][1]);
          const uint32_t a3 = int8_pair<2>(w1, s[mt][1], b[mt][1]);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            mma_m16n8k16(acc[mt][nt], a0, a1, a2, a3, xb[nt][0], xb[nt][1]);
        }
      }
    }
  }
}

// The STAGE twins' copy of the group parameters: the scale and bias pairs (one word a chunk,
// both groups of an int4 g64 chunk) of the warp's 16 x MT weight rows for its chunks [c, c_end),
// into the warp's rows of p.staged_words = W words each from `base` (the CTA's staging area):
// the scale pairs first, then at D = (W - 2) / 2 the bias pairs. cp.async, two chunks' 8 bytes a
// copy, in one commit group. Points stage_row at the lane's rows (g and g + 8 of each m16 tile)
// and returns D. REQUIRES c_end - c even and the arrays 8-byte aligned (staged_words).
template <int MT, bool SILU>
__device__ __forceinline__ int stage_parameter_pairs(uint32_t *base, const Params &p, int warp,
                                                     int m_warp, int g, int lane, int c, int c_end,
                                                     const uint32_t *(&stage_row)[MT][2]) {
  const int w = p.staged_words, d = (w - 2) / 2;
  uint32_t *stage = base + warp * 16 * MT * w;
  const int vectors_per_row = (c_end - c) / 2; // per array
  const int total = 16 * MT * 2 * vectors_per_row;
  for (int e = lane; e < total; e += 32) {
    const int rr = e / (2 * vectors_per_row), rest = e - rr * 2 * vectors_per_row;
    const int arr = rest >= vectors_per_row, v = rest - arr * vectors_per_row;
    const size_t row = static_cast<size_t>(weight_row<SILU>(p, m_warp + rr));
    const uint16_t *src =
        (arr ? p.biases : p.scales) + row * p.groups_per_row + 2 * static_cast<size_t>(c + v * 2);
    copy_weight_async_half(stage + rr * w + arr * d + v * 2, src);
  }
  copy_async_commit();
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      stage_row[mt][h] = stage + (mt * 16 + h * 8 + g) * w;
  return d;
}

// S > 0 (asynchronous pipeline): instead of the register double buffer of J chunks, each lane
// copies its own packed words of the next S chunks (cp.async, L2 only) into a lane-private
// ring in shared memory after the partials (S x 2 MT x 512 bytes per warp) and reads back only
// what it copied (no barrier); the chunks' scales and biases wait in a register ring (or, in
// the STAGE twin, in shared memory for the whole slice). More
// bytes in flight per warp at fewer registers; same fragments and mma order, so bit-identical
// to S = 0.
// GROUPS: compiled for p.factored == GROUPS (0 per weight, 1 one group per chunk, 2 two); each
// kernel carries only its own dequantisation, which keeps its register count down.
// SILU: the gate/up linear with SiLU x up in its epilogue (split_k_reduce.cuh, weight_row).
// STAGE: the twin that stages the group parameters in shared memory (p.staged_words; compiled
// apart, so the kernels without it keep their code and registers): of the register pipeline's
// J 2 parameter-vector kernels, and of the cp.async ring's int4 kernels (S > 0).
// DEEP: the staged twin whose register pipeline holds two blocks of words ahead (`deep=2`; see
// kQmvMmaDeeper above), of the one-tile J 2 kernel of 8-row CTAs only.
// NORM: the twin whose last CTA then normalises y's rows as the rmsnorm after the linear would
// (p.norm; rmsnorm_row::grid_norm_rows), of the per-weight register pipeline only.
template <int BITS, int NT, int MT, int J, int MAX_THREADS, int S, int GROUPS, bool SILU = false,
          bool STAGE = false, bool DEEP = false, bool NORM = false>
__global__ void __launch_bounds__(MAX_THREADS) qmv_affine_mma_kernel(const KernelParams<NORM> p) {
  // A chain link (a dependent launch) waits for the kernel before it (griddepcontrol.wait)
  // before its first activation load and lets the next one start; both are no-ops otherwise.
  // The register pipeline (S = 0) issues its first block of weights and group parameters,
  // which no kernel of the chain writes, before the wait (`start_activations`); the cp.async
  // kernels wait first of all.
  if constexpr (S > 0) {
    pdl_wait();
    pdl_launch_dependents();
  }
  if constexpr (NORM) // the norm's weight, which the last CTA reads after its count, into L2
    rmsnorm_row::grid_norm_prefetch(p.norm);
  using L = Layout<BITS>;
  using R = LaneRuns<BITS, GROUPS>;
  extern __shared__ float4 shared_partials[];
  const auto [lane, warp, slice, g, t, m_cta, m_warp, row0] = mma_warp_coords<MT, NT>(p);
  const int words_per_row = p.k / L::kValuesPerWord;

  // Rows past the end are clamped to a valid row; their results are never stored.
  const uint32_t *qp[MT][2];
  const uint16_t *sp[MT][2];
  const uint16_t *bp[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const size_t row = static_cast<size_t>(weight_row<SILU>(p, m_warp + mt * 16 + h * 8 + g));
      qp[mt][h] = p.q + row * words_per_row + R::kRunWords * t;
      sp[mt][h] = p.scales + row * p.groups_per_row;
      bp[mt][h] = p.biases + row * p.groups_per_row;
    }
  // The register pipeline's loads (S = 0) may address from 32-bit offsets (kQmvMmaOffsets32).
  // The cp.async kernels keep the pointers above: with the offsets five of them spilled 8-72
  // bytes.
  constexpr bool kOffsets = S == 0 && kQmvMmaOffsets32;
  uint32_t qo[MT][2], po[MT][2];
  if constexpr (kOffsets)
    lane_row_offsets<MT, SILU>(qo, po, p, words_per_row, m_warp, g, R::kRunWords * t, 0u);
  const uint16_t *xp[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    xp[nt] =
        p.x + static_cast<size_t>(min(row0 + nt * 8 + g, p.rows - 1)) * p.k + R::kRunValues * t;

  float acc[MT][NT][4]; // m16n8 accumulators, fp32
  zero_accumulators(acc);

  // The chunk's first group of the lane's (first) run.
  auto first_group = [&](int chunk) { return R::first_k(chunk, t) >> p.group_shift; };
  // Parameter pairs (int4 g64 per weight, register pipeline): each parameter word holds both
  // groups of its chunk, read for the whole quad from group 2 x chunk (4-byte aligned: an even
  // group of a row of an even number of groups, the arrays 4-byte aligned), the lane's half
  // chosen at use (`half`). Blocks of J chunks then take one vector load a row (load_block),
  // where the rows, the slice's first chunk and the arrays allow it.
  // One activation tile (rows 1-8, a decode batch): at two the <4, 2, 1, 2> kernel spilled.
  constexpr bool kPairCapable = kQmvParameterVectors && BITS == 4 && GROUPS == 0 && S == 0 &&
                                NT == 1 && !kOffsets && (J == 2 || J == 4);
  // The register pipeline's cursor loads (kQmvMmaCursor; load_block below).
  constexpr bool kCursor =
      kQmvMmaCursor && S == 0 && BITS == 4 && (NT >= 2 || kQmvMmaCursorOneTile) && !kPairCapable &&
      !STAGE && !kOffsets && (GROUPS == 0 || (GROUPS == 1 && (J == 1 || NT == 1) && NT * MT <= 4));
  const uintptr_t param_bases =
      reinterpret_cast<uintptr_t>(p.scales) | reinterpret_cast<uintptr_t>(p.biases);
  // The cp.async kernels' STAGE twin (int4 g64 per weight) reads the same pairs, from
  // its staged copy of them (below).
  constexpr bool kStagedRing = STAGE && S > 0;
  static_assert(!kStagedRing || (BITS == 4 && GROUPS == 0),
                "the cp.async ring stages the parameters of int4 per-weight kernels");
  const bool pairs = (kPairCapable || kStagedRing) && p.group_shift == 6 &&
                     p.groups_per_row % 2 == 0 && param_bases % 4 == 0;
  const uint32_t half = pairs && (t & 2) ? 0x3232u : 0x1010u;
  auto load = [&](int chunk, bool in_k, WeightFragment<MT> &f) {
    const int group = !pairs ? first_group(chunk) : 2 * chunk;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (in_k) {
          const uint32_t *q = kOffsets ? p.q + (qo[mt][h] + static_cast<uint32_t>(chunk) * 16u)
                                       : qp[mt][h] + chunk * 16;
          const uint16_t *sc =
              kOffsets ? p.scales + (po[mt][h] + static_cast<uint32_t>(group)) : sp[mt][h] + group;
          const uint16_t *bi =
              kOffsets ? p.biases + (po[mt][h] + static_cast<uint32_t>(group)) : bp[mt][h] + group;
          f.q[mt][h] = load_lane_words<BITS, GROUPS>(q);
          if ((kPairCapable || kStagedRing) && pairs) {
            f.scale[mt][h] = load_parameter_pair(sc);
            f.bias[mt][h] = load_parameter_pair(bi);
          } else if constexpr (R::kRuns == 1) {
            f.scale[mt][h] = load_parameter(sc);
            f.bias[mt][h] = load_parameter(bi);
          } else {
            f.scale[mt][h] = load_parameter_pair(sc);
            f.bias[mt][h] = load_parameter_pair(bi);
          }
        } else { // past K: q = scale = bias = 0 gives w = 0
          f.q[mt][h] = make_uint4(0, 0, 0, 0);
          f.scale[mt][h] = 0;
          f.bias[mt][h] = 0;
        }
      }
  };

  const int total_chunks = (p.k + L::kChunkK - 1) / L::kChunkK;
  int c = slice * p.slice_chunks;
  const int c_end = min(c + p.slice_chunks, total_chunks);
  const int c_full = min(c_end, p.k / L::kChunkK); // chunks [c, c_full) need no K guard

  // Activations of one chunk from L1; zero past the slice or past K.
  auto load_x = [&](int chunk, uint4(&x)[NT][L::kXVectors]) {
    const bool in_k = chunk < c_end && chunk * L::kChunkK + L::kLaneK * t < p.k;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int v = 0; v < L::kXVectors; ++v)
        x[nt][v] = in_k ? load_activation(xp[nt] + chunk * L::kChunkK + R::x_offset(v))
                        : make_uint4(0, 0, 0, 0);
  };
  // The activations of the chunk being multiplied. Where registers allow (kXAhead), the next
  // chunk's are loaded before this one is multiplied, which takes the L1 round trip off each
  // chunk's dependency chain (5-13 % on the H200 against loading them at use,
  // docs/notes/qmv_affine.md); the factored ring kernels with four m16 x n8 tiles per warp
  // would spill with it, so they load at use, as do the two-group kernels of eight tiles or of
  // the cp.async ring at 512 threads (128 registers), which spilled 16-96 bytes with it.
  constexpr bool kXAhead = !(S > 0 && GROUPS > 0 && NT * MT >= 4) &&
                           !(GROUPS == 2 && (NT * MT >= 8 || (S > 0 && MAX_THREADS >= 512)));

  uint4 x[NT][L::kXVectors];
  // From here on the kernel reads activations: the register pipeline waits here, after its
  // first block of weights is in flight.
  auto start_activations = [&] {
    if constexpr (S == 0) {
      pdl_wait();
      pdl_launch_dependents();
    }
    if constexpr (kXAhead)
      load_x(c, x);
  };

  // Multiplies one chunk: weights dequantised from `f`.
  auto multiply = [&](int chunk, const WeightFragment<MT> &f) {
    uint4 x_next[NT][L::kXVectors];
    if constexpr (kXAhead)
      load_x(chunk + 1, x_next);
    else
      load_x(chunk, x);
    mma_chunk<BITS, NT, MT, GROUPS>(acc, f, x, half);
    if constexpr (kXAhead)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int v = 0; v < L::kXVectors; ++v)
          x[nt][v] = x_next[nt][v];
  };
  // The parameter-vector kernels (int4 g64 per weight, one tile) multiply the register
  // pipeline's full chunks [c, c_full) with the next chunk's activations read unguarded: the
  // chunk after `chunk` is in [c, c_full) or, where it is c_full itself, `chunk` is read again
  // instead (a hit in L1, never used: the chunks past the pipeline reload theirs, guarded).
  // Without the guard, its zero fills and its reads of p.x and p.k are gone (with the block
  // offsets below, 537 instructions of the `ahead=2` two-chunk loop became 471, and 126
  // registers 106; SASS, cuobjdump). Elsewhere it cost registers: 10-20 at J 4 or two m16 tiles
  // (a CTA an SM at 128 threads), up to 30 in the factored and multi-tile kernels, four of
  // which spilled.
  constexpr bool kXUnguarded = (kPairCapable && MT == 1 && J == 2) || (kCursor && kXAhead);
  static_assert(!kXUnguarded || kXAhead, "the unguarded look-ahead is a look-ahead");
  auto multiply_full = [&](int chunk, const WeightFragment<MT> &f) {
    uint4 x_next[NT][L::kXVectors];
    const uint32_t ahead = static_cast<uint32_t>(min(chunk + 1, c_full - 1));
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int v = 0; v < L::kXVectors; ++v)
        x_next[nt][v] =
            load_activation(xp[nt] + ahead * static_cast<uint32_t>(L::kChunkK) + R::x_offset(v));
    mma_chunk<BITS, NT, MT, GROUPS>(acc, f, x, half);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int v = 0; v < L::kXVectors; ++v)
        x[nt][v] = x_next[nt][v];
  };

  if constexpr (S > 0) {
    start_activations();
    uint4 *ring = reinterpret_cast<uint4 *>(shared_partials + (blockDim.x >> 5) * MT * NT * 32) +
                  warp * S * 2 * MT * 32 + lane;
    uint32_t scale[S][MT][2], bias[S][MT][2];
    // Staged parameters (the STAGE twin, p.staged_words > 0): the warp's rows' scale and bias
    // pairs of its chunks [c, c_full) are copied into shared memory after the ring's stages
    // (cp.async, two chunks' 8 bytes a copy) in a commit group of their own before the first
    // words, waited for once, and each chunk's pair read from there at use, one shared load a
    // row where there was a global one that touched eight rows' lines (the register pipeline's
    // twin below does the same; docs/notes/qmv_affine.md, v17-v18). The ring then holds S
    // chunks of words in flight with no parameter registers. A row's W = staged_words words: the
    // scale pairs, then at D = (W - 2) / 2 the bias pairs; W / 2 is odd, so the eight rows of one
    // load fall in distinct banks. Same values, so the same bits.
    // The twin has no unstaged path (its parameter registers took 24 more registers at two m16
    // tiles), so it REQUIRES what staged_words checks: p.staged_words > 0, `pairs`, and K / 128
    // and the slice's chunks even, so that [c, c_full) is whole pairs.
    const int c_first = c;
    const uint32_t *stage_row[MT][2] = {};
    int stage_d = 0;
    if constexpr (kStagedRing) {
      if (c < c_full) {
        stage_d = stage_parameter_pairs<MT, SILU>(
            reinterpret_cast<uint32_t *>(shared_partials + (blockDim.x >> 5) * MT * NT * 32 +
                                         (blockDim.x >> 5) * S * 2 * MT * 32),
            p, warp, m_warp, g, lane, c, c_full, stage_row);
      }
    }
    // Stage `stage` (a compile-time index after unrolling) receives chunk `chunk`.
    auto issue = [&](int chunk, int stage) {
      const int group = first_group(chunk);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          uint4 *slot = ring + (stage * 2 * MT + mt * 2 + h) * 32;
          if constexpr (R::kRuns == 1) {
            copy_weight_async(slot, qp[mt][h] + chunk * 16);
            if constexpr (!kStagedRing) {
              scale[stage][mt][h] = load_parameter(sp[mt][h] + group);
              bias[stage][mt][h] = load_parameter(bp[mt][h] + group);
            }
          } else { // the two runs into the slot's halves: the words as load_lane_words orders them
            copy_weight_async_half(slot, qp[mt][h] + chunk * 16);
            copy_weight_async_half(reinterpret_cast<uint2 *>(slot) + 1,
                                   qp[mt][h] + chunk * 16 + R::kRunStrideWords);
            scale[stage][mt][h] = load_parameter_pair(sp[mt][h] + group);
            bias[stage][mt][h] = load_parameter_pair(bp[mt][h] + group);
          }
        }
    };
    auto consume = [&](int chunk, int stage) {
      WeightFragment<MT> f;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          f.q[mt][h] = ring[(stage * 2 * MT + mt * 2 + h) * 32];
          if constexpr (kStagedRing) {
            const uint32_t v = static_cast<uint32_t>(chunk - c_first);
            f.scale[mt][h] = stage_row[mt][h][v];
            f.bias[mt][h] = stage_row[mt][h][stage_d + v];
          } else {
            f.scale[mt][h] = scale[stage][mt][h];
            f.bias[mt][h] = bias[stage][mt][h];
          }
        }
      multiply(chunk, f);
    };
    const int c0 = c;
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (c0 + s < c_full)
        issue(c0 + s, s);
      copy_async_commit();
    }
    if constexpr (kStagedRing) { // the oldest group: the staged parameters, for the whole warp
      copy_async_wait<S>();
      __syncwarp();
    }
    // Chunk c0 + i sits in stage i % S; one commit per chunk keeps wait_group<S - 1> exact.
    for (; c + S <= c_full; c += S) {
#pragma unroll
      for (int s = 0; s < S; ++s) {
        copy_async_wait<S - 1>();
        consume(c + s, s);
        if (c + s + S < c_full)
          issue(c + s + S, s);
        copy_async_commit();
      }
    }
    copy_async_wait<0>();
#pragma unroll
    for (int s = 0; s < S; ++s)
      if (c + s < c_full)
        consume(c + s, s);
    c = max(c, c_full);
  } else {
    // The weights of the next J chunks are in flight while the current J are dequantised and
    // multiplied; activations come from L1 at use.
    // Blocks start at c + a multiple of J: vectors of J pairs are (J x 4)-byte aligned where the
    // first chunk and a row's pairs are multiples of J and the arrays are so aligned.
    const bool vectors =
        pairs && c % J == 0 && (p.groups_per_row / 2) % J == 0 && param_bases % (4 * J) == 0;
    // Staged parameters (p.staged_words > 0, the J 2 vector kernels' twins): the warp's rows'
    // scale and bias pairs of every full block of its slice are copied into shared memory
    // (cp.async, one block's 8 bytes a copy) before its first words are asked for, waited for
    // once after them, and read from there a block at a time: one shared load a row and block
    // where there was a global one, each of which touched eight rows' lines
    // (bench/read_ceiling's qrows p8 against p4: the words and parameters of 28672 x 4096 read
    // at 0.90 against 0.73 of the bandwidth; docs/notes/qmv_affine.md, v17). A row's
    // W = staged_words words: the scale pairs, then at D = (W - J) / 2 the bias pairs; W / J is
    // odd, so the eight rows of one load fall in distinct banks. Same values, so the same bits.
    const int c_first = c;
    bool staged = false;
    const uint32_t *stage_row[MT][2] = {};
    int stage_d = 0;
    static_assert(!STAGE || (kPairCapable && J == 2),
                  "the register pipeline stages the J 2 vector kernels' parameters");
    if constexpr (STAGE) {
      staged = vectors && p.staged_words > 0 && c + J <= c_full;
      if (staged) {
        stage_d = stage_parameter_pairs<MT, SILU>(
            reinterpret_cast<uint32_t *>(shared_partials + (blockDim.x >> 5) * MT * NT * 32), p,
            warp, m_warp, g, lane, c, c_full, stage_row);
      }
    }
    auto block_words = [&](int c0, WeightFragment<MT>(&f)[J]) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t *q = qp[mt][h] + static_cast<uint32_t>(c0) * 16u;
#pragma unroll
          for (int j = 0; j < J; ++j)
            f[j].q[mt][h] = load_lane_words<BITS, GROUPS>(q + j * 16);
        }
    };
    auto block_staged_params = [&](int c0, WeightFragment<MT>(&f)[J]) {
      const uint32_t v = static_cast<uint32_t>(c0 - c_first);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint2 sw = *reinterpret_cast<const uint2 *>(stage_row[mt][h] + v);
          const uint2 bw = *reinterpret_cast<const uint2 *>(stage_row[mt][h] + stage_d + v);
          f[0].scale[mt][h] = sw.x, f[1].scale[mt][h] = sw.y;
          f[0].bias[mt][h] = bw.x, f[1].bias[mt][h] = bw.y;
        }
    };
    // Cursor loads (kQmvMmaCursor): the rows' word and parameter pointers at the next block's
    // first chunk, advanced J chunks a block; load_block is called once a block, in order, from
    // the slice's first chunk (register_pipeline), on full chunks only. At 4 bits every group
    // (32, 64, 128) divides the 128-value chunk, so a chunk's first group is the block's plus
    // j x (128 / group).
    const uint32_t *q_cur[MT][2];
    const uint16_t *s_cur[MT][2], *b_cur[MT][2];
    const uint32_t chunk_groups = static_cast<uint32_t>(L::kChunkK) >> p.group_shift;
    if constexpr (kCursor) {
      const uint32_t group0 = static_cast<uint32_t>(R::first_k(c, t)) >> p.group_shift;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          q_cur[mt][h] = qp[mt][h] + static_cast<uint32_t>(c) * 16u;
          s_cur[mt][h] = sp[mt][h] + group0;
          b_cur[mt][h] = bp[mt][h] + group0;
        }
    }
    auto load_block = [&](int c0, WeightFragment<MT>(&f)[J]) {
      bool vector_block = false;
      if constexpr (kPairCapable && !STAGE) // the staged twin stages or loads a chunk at a time
        vector_block = vectors;
      if constexpr (kCursor) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int j = 0; j < J; ++j) {
              f[j].q[mt][h] = load_lane_words<BITS, GROUPS>(q_cur[mt][h] + j * 16);
              const uint32_t o = static_cast<uint32_t>(j) * chunk_groups;
              if constexpr (R::kRuns == 1) {
                f[j].scale[mt][h] = load_parameter(s_cur[mt][h] + o);
                f[j].bias[mt][h] = load_parameter(b_cur[mt][h] + o);
              } else {
                f[j].scale[mt][h] = load_parameter_pair(s_cur[mt][h] + o);
                f[j].bias[mt][h] = load_parameter_pair(b_cur[mt][h] + o);
              }
            }
            q_cur[mt][h] += J * 16;
            s_cur[mt][h] += J * chunk_groups;
            b_cur[mt][h] += J * chunk_groups;
          }
      } else if (STAGE && staged) {
        block_words(c0, f);
        block_staged_params(c0, f);
      } else if (vector_block) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            // From the block's first chunk as an unsigned offset, each chunk of the block at an
            // immediate offset from it (the signed chunk index took a sign extension and a
            // 64-bit add a load).
            const uint32_t *q = qp[mt][h] + static_cast<uint32_t>(c0) * 16u;
            uint32_t sw[J], bw[J];
#pragma unroll
            for (int j = 0; j < J; ++j)
              f[j].q[mt][h] = load_lane_words<BITS, GROUPS>(q + j * 16);
            load_parameter_pairs<J>(sp[mt][h] + static_cast<uint32_t>(c0) * 2u, sw);
            load_parameter_pairs<J>(bp[mt][h] + static_cast<uint32_t>(c0) * 2u, bw);
#pragma unroll
            for (int j = 0; j < J; ++j) {
              f[j].scale[mt][h] = sw[j];
              f[j].bias[mt][h] = bw[j];
            }
          }
      } else {
#pragma unroll
        for (int j = 0; j < J; ++j)
          load(c0 + j, true, f[j]);
      }
    };
    WeightFragment<MT> fa[J];
    if (STAGE && staged) { // the first words out, then the staged parameters waited for once
      block_words(c, fa);
      copy_async_wait<0>();
      __syncwarp();
      block_staged_params(c, fa);
    } else if (c + J <= c_full) {
      load_block(c, fa);
    }
    start_activations();
    // The fragments may alternate between two sets (kQmvMmaPingPong, register_pipeline).
    constexpr bool kPingPong =
        (kQmvMmaPingPong && NT == 1 && BITS == 4 && (GROUPS == 0 || (GROUPS == 2 && MT == 2))) ||
        (kQmvMmaCursorPingPong && kCursor && NT * MT < 8);
    static_assert(!DEEP ||
                      (BITS == 4 && NT == 1 && MT == 1 && J == 2 && GROUPS == 0 && S == 0 && STAGE),
                  "the DEEP twin is the staged per-weight 4-bit J 2 kernel of one m16 tile and "
                  "one n8 tile, register pipeline");
    auto pipeline = [&](auto &mul) {
      if constexpr (DEEP) {
        if (staged && c_full - c >= kQmvAffineDeepMinChunks) {
          // Two blocks of words ahead; each chunk's staged parameters read from shared memory
          // at use, so that the three fragment sets hold words only.
          auto words = [&](int c0, WeightFragment<MT>(&f)[J]) { block_words(c0, f); };
          auto mul_staged = [&](int chunk, WeightFragment<MT> &f) {
            const uint32_t v = static_cast<uint32_t>(chunk - c_first);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                f.scale[mt][h] = stage_row[mt][h][v];
                f.bias[mt][h] = stage_row[mt][h][stage_d + v];
              }
            mul(chunk, f);
          };
          constexpr int kDepth = kQmvMmaDeeper ? 3 : 2;
          return register_pipeline_deep<J, kDepth>(c, c_full, fa, words, mul_staged);
        }
      }
      return register_pipeline<J, kPingPong>(c, c_full, fa, load_block, mul);
    };
    if constexpr (kXUnguarded) {
      c = pipeline(multiply_full);
      if (c < c_end) // the last full chunk's look-ahead did not read chunk c_full
        load_x(c, x);
    } else {
      c = pipeline(multiply);
    }
  }
  // Remaining chunks one at a time; lanes whose K range lies past K contribute zero (K is a
  // multiple of 32, so a lane's range is either wholly inside or wholly outside).
  for (; c < c_end; ++c) {
    const bool in_k = c * L::kChunkK + L::kLaneK * t < p.k;
    WeightFragment<MT> f;
    load(c, in_k, f);
    multiply(c, f);
  }

  store_mma_partials_and_reduce<MT, NT, SILU>(p, shared_partials, acc, warp, lane, m_cta, row0);
  if constexpr (NORM) {
    static_assert(!SILU && !STAGE && S == 0, "the NORM twin is a plain register pipeline's");
    __syncthreads(); // no thread still reads the partials (split_k 1 has no barrier after them)
    rmsnorm_row::grid_norm_rows(p.norm, reinterpret_cast<float *>(shared_partials));
  }
}

// --- the shallow kernel (`shallow=C`): a warp's whole K slice in one round trip -------------
//
// The register pipeline keeps a block of J chunks in flight while it multiplies the one before,
// which costs it 98-130 registers whatever the slice; on grids of under a wave (matrices of a few
// MB at one row) a warp then waits on two or more DRAM round trips in turn, and 2 CTAs of 8 warps
// fit an SM where PyTorch's int4 kernel fits 4 (docs/notes/qmv_affine.md, v25). This kernel takes
// the slice (at most C chunks, C = 2 or 4) into registers at once, waits once, and multiplies the
// chunks in order: no pipeline, no parameter pairs, 32-bit offsets, one m16 tile and one n8
// activation tile (rows 1-8) a warp, 4 bits, per weight (GROUPS 0) or factored with one group a
// chunk (GROUPS 1). ROWS 8: a warp takes 8 weight rows, the tile's upper half zero and never
// loaded, so that a small matrix has twice the warps (each output's arithmetic is its own row's,
// so the bits are the same). Every chunk goes through mma_chunk in increasing K and the warps'
// partials through the mma path's epilogue, so a config gives the bits of the mma configs of its
// k_slices. The first loads (weights and group parameters, which no kernel of a chain writes) go
// out before griddepcontrol.wait, the activations after it.
template <int C, int GROUPS, int ROWS, int MAX_THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(MAX_THREADS, MIN_BLOCKS)
    qmv_affine_shallow_kernel(const Params p) {
  static_assert(GROUPS == 0 || GROUPS == 1, "per weight or one group a chunk");
  static_assert(ROWS == 8 || ROWS == 16, "a warp's weight rows: the m16 tile or its lower half");
  using L = Layout<4>;
  using R = LaneRuns<4, GROUPS>;
  extern __shared__ float4 shared_partials[];
  // Warps of 8 weight rows (ROWS 8) leave the tile's upper half zero.
  const auto [lane, warp, slice, g, t, m_cta, m_warp, row0] = mma_warp_coords<1, 1, ROWS>(p);
  uint32_t qo[1][2], po[1][2];
  lane_row_offsets<1, false>(qo, po, p, p.k / L::kValuesPerWord, m_warp, g, R::kRunWords * t, 0u);
  const int total_chunks = (p.k + L::kChunkK - 1) / L::kChunkK;
  const int c0 = slice * p.slice_chunks;
  const int c_end = min(c0 + p.slice_chunks, total_chunks);

  WeightFragment<1> f[C];
#pragma unroll
  for (int j = 0; j < C; ++j) {
    const int chunk = c0 + j;
    // Lanes whose K range lies past K (K a multiple of 32) take zeros: w = 0.
    const bool in_k = chunk < c_end && chunk * L::kChunkK + L::kLaneK * t < p.k;
    const uint32_t group = static_cast<uint32_t>(R::first_k(chunk, t) >> p.group_shift);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (in_k && (ROWS == 16 || h == 0)) {
        f[j].q[0][h] =
            load_lane_words<4, GROUPS>(p.q + (qo[0][h] + static_cast<uint32_t>(chunk) * 16u));
        f[j].scale[0][h] = load_parameter(p.scales + (po[0][h] + group));
        f[j].bias[0][h] = load_parameter(p.biases + (po[0][h] + group));
      } else {
        f[j].q[0][h] = make_uint4(0, 0, 0, 0);
        f[j].scale[0][h] = 0;
        f[j].bias[0][h] = 0;
      }
    }
  }
  pdl_wait();
  pdl_launch_dependents();

  const uint16_t *xp =
      p.x + static_cast<size_t>(min(row0 + g, p.rows - 1)) * p.k + R::kRunValues * t;
  float acc[1][1][4];
  zero_accumulators(acc);
#pragma unroll
  for (int j = 0; j < C; ++j) {
    const int chunk = c0 + j;
    if (chunk >= c_end) // the slice's chunks only, as every kernel of its order
      break;
    const bool in_k = chunk * L::kChunkK + L::kLaneK * t < p.k;
    uint4 x[1][L::kXVectors];
#pragma unroll
    for (int v = 0; v < L::kXVectors; ++v)
      x[0][v] =
          in_k ? load_activation(xp + chunk * L::kChunkK + R::x_offset(v)) : make_uint4(0, 0, 0, 0);
    mma_chunk<4, 1, 1, GROUPS>(acc, f[j], x);
  }
  store_mma_partials(shared_partials, acc, warp, lane);
  reduce_and_store(p, reinterpret_cast<const float *>(shared_partials), 128, ROWS, 8, m_cta, row0,
                   mma_partial_offset<1>);
}

// --- grouped path (4 bits, exact-integer mma for any group) --------------------------------
//
// The factored form of the mma kernel (exact 128 + q in the mma, scale and bias applied to
// the fp32 partial) for groups smaller than the 128-value chunk too: the G = 128 / group
// groups of a chunk go to separate mma columns. Column j of a spread n8 tile holds activation
// row j / G restricted to the K values of group j % G of the chunk: lane (g, t) supplies its
// activations to column g only where its own K range (the chunk's values 32t..32t+31, inside
// group t G / 4) is that column's group, and zeros elsewhere. So one m16n8k16 tile gives the
// per-group partials of 8 / G activation rows, and per chunk and column
//   acc += scale * part + (bias - 128 scale) * xsum
// in fp32, with the column's activation sum xsum from a second mma with an all-ones A. At the
// end a row's G columns are added in group order (G = 4: the lane pair's halves, even lane
// first). Per weight: 3 shifts and 4 lop3 per 8 values, one mma per 256 values and tile, and
// no bf16 rounding of weights; at 8 / G rows per spread tile the tensor work is what the
// per-weight form spends on 8 rows.
// Summation order: per output, the chunks of each K slice in increasing K, per group column,
// then the columns in group order, then the k_slices slices in order; a function of (k, group,
// k_slices) alone, never of rows, rows_per_cta or the tile, so grouped configs with equal
// k_slices are bit-identical per row at every row count. K must be a multiple of 128.
// NS spread n8 tiles per CTA; rows_per_cta (a parameter) <= NS x 8 / G.
template <int NS, int MT, int J, int G, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS) qmv_affine_grouped_kernel(const Params p) {
  using L = Layout<4>;
  extern __shared__ float4 shared_partials[];
  const MmaWarpCoords w = mma_warp_coords<MT, 1>(p);
  const int warp = w.warp, slice = w.slice, g = w.g, t = w.t;
  const int m_cta = w.m_cta, m_warp = w.m_warp;
  // A CTA's activation rows: rows_per_cta (a parameter), not a multiple of 8.
  const int row0 = static_cast<int>(blockIdx.z) * p.rows_per_cta;
  // G (a template parameter: the scale loads and the column arithmetic compile per group size).
  constexpr int cols = G;
  constexpr int col_shift = G == 1 ? 0 : G == 2 ? 1 : 2;
  const int words_per_row = p.k / L::kValuesPerWord;

  // The lane's two columns 2t, 2t + 1 lie in groups (2t) % G and (2t + 1) % G of a chunk: one
  // scale for both at G = 1, else two adjacent ones (a 4-byte load). Addressed by 32-bit
  // offsets (lane_row_offsets), as the mma kernel's register pipeline.
  const uint32_t col_group = static_cast<uint32_t>((2 * t) & (cols - 1));
  uint32_t qo[MT][2], po[MT][2];
  lane_row_offsets(qo, po, p, words_per_row, m_warp, g, 4u * static_cast<uint32_t>(t), col_group);
  auto load = [&](int chunk, WeightFragment<MT> &f) {
    const uint32_t ch = static_cast<uint32_t>(chunk);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f.q[mt][h] = load_weight(p.q + (qo[mt][h] + ch * 16u));
        if constexpr (cols == 1) {
          const uint32_t s = load_parameter(p.scales + (po[mt][h] + ch)),
                         b = load_parameter(p.biases + (po[mt][h] + ch));
          f.scale[mt][h] = s | (s << 16);
          f.bias[mt][h] = b | (b << 16);
        } else {
          f.scale[mt][h] = load_parameter_pair(p.scales + (po[mt][h] + ch * cols));
          f.bias[mt][h] = load_parameter_pair(p.biases + (po[mt][h] + ch * cols));
        }
      }
  };

  const int total_chunks = p.k / L::kChunkK;
  int c = slice * p.slice_chunks;
  const int c_end = min(c + p.slice_chunks, total_chunks);

  // Weights, scales and biases do not depend on the previous kernel of a chain: the first
  // chunks are requested before the wait.
  WeightFragment<MT> fa[J];
#pragma unroll
  for (int j = 0; j < J; ++j)
    if (c + j < c_end)
      load(c + j, fa[j]);
  pdl_wait();
  pdl_launch_dependents();

  // Column g of spread tile ns: activation row (ns * 8 + g) / G of the CTA, group
  // (ns * 8 + g) % G; the lane feeds it only where its own K range is that group.
  const uint16_t *xp[NS];
  bool x_on[NS];
#pragma unroll
  for (int ns = 0; ns < NS; ++ns) {
    const int j = ns * 8 + g;
    const int a = j >> col_shift;
    x_on[ns] = (j & (cols - 1)) == ((t * cols) >> 2) && a < p.rows_per_cta && row0 + a < p.rows;
    xp[ns] = p.x + static_cast<size_t>(x_on[ns] ? row0 + a : 0) * p.k + L::kLaneK * t;
  }
  auto load_x = [&](int chunk, uint4(&x)[NS][L::kXVectors]) {
#pragma unroll
    for (int ns = 0; ns < NS; ++ns)
#pragma unroll
      for (int v = 0; v < L::kXVectors; ++v)
        x[ns][v] = x_on[ns] && chunk < c_end ? load_activation(xp[ns] + chunk * L::kChunkK + 8 * v)
                                             : make_uint4(0, 0, 0, 0);
  };
  // Activations one chunk ahead where registers allow, in two buffers used in turn; fragments
  // in two J-deep sets used in turn. No copies between iterations.
  constexpr bool kXAhead = NS * MT <= 2;
  uint4 x[2][NS][L::kXVectors];
  if constexpr (kXAhead)
    load_x(c, x[0]);

  float acc[MT][NS][4]; // per lane: rows g, g + 8 x columns 2t, 2t + 1 of each spread tile
  zero_accumulators(acc);

  // Multiplies chunk `chunk` (weights `f`, activations in buffer B, loaded here where they are
  // not ahead), after requesting the next chunk's activations into the other buffer.
  auto multiply = [&]<int B>(int chunk, const WeightFragment<MT> &f) {
    if constexpr (kXAhead)
      load_x(chunk + 1, x[1 - B]);
    else
      load_x(chunk, x[B]);
    float part[MT][NS][4], xsum[NS][4];
    mma_int4_offset_chunk(part, xsum, x[B], f.q);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Columns 2t (low half) and 2t + 1 (high half): sum x (q s + b) = s part + (b - 128 s)
        // xsum with part = sum x (128 + q).
        const float s0 = bf16_lo(f.scale[mt][h]), s1 = bf16_hi(f.scale[mt][h]);
        const float b0 = fmaf(-128.0f, s0, bf16_lo(f.bias[mt][h]));
        const float b1 = fmaf(-128.0f, s1, bf16_hi(f.bias[mt][h]));
#pragma unroll
        for (int ns = 0; ns < NS; ++ns) {
          acc[mt][ns][2 * h] =
              fmaf(b0, xsum[ns][0], fmaf(s0, part[mt][ns][2 * h], acc[mt][ns][2 * h]));
          acc[mt][ns][2 * h + 1] =
              fmaf(b1, xsum[ns][1], fmaf(s1, part[mt][ns][2 * h + 1], acc[mt][ns][2 * h + 1]));
        }
      }
  };
  // J chunks from `f`, the activations of the first in buffer 0 (J even, or two blocks in turn:
  // the caller passes the buffer the block starts in).
  auto block = [&]<int B0>(int first, const WeightFragment<MT>(&f)[J]) {
#pragma unroll
    for (int j = 0; j < J; ++j) {
      if ((B0 + j) % 2 == 0)
        multiply.template operator()<0>(first + j, f[j]);
      else
        multiply.template operator()<1>(first + j, f[j]);
    }
  };

  // fa holds chunks c .. c + J - 1 where c + J <= c_end; the activations of chunk c are in
  // buffer 0. Two blocks per iteration: fb is loaded while fa is multiplied and fa while fb is.
  WeightFragment<MT> fb[J];
  for (; c + 2 * J <= c_end; c += 2 * J) {
#pragma unroll
    for (int j = 0; j < J; ++j)
      load(c + J + j, fb[j]);
    block.template operator()<0>(c, fa);
    if (c + 3 * J <= c_end)
#pragma unroll
      for (int j = 0; j < J; ++j)
        load(c + 2 * J + j, fa[j]);
    block.template operator()<J % 2>(c + J, fb);
  }
  if (c + J <= c_end) {
    block.template operator()<0>(c, fa);
    c += J;
  }
  // The last chunk of the slice (fewer than J <= 2 left): its activations are in buffer 0
  // (every block so far started there and had an even length, or was the last).
  static_assert(J <= 2, "one chunk at most after the blocks");
  if (c < c_end) {
    WeightFragment<MT> f;
    load(c, f);
    multiply.template operator()<0>(c, f);
  }

  // Columns to activation rows: a row's G columns added in group order. Partials are written
  // [m in warp][row in CTA] (NS x 8 rows per m), read back by reduce_and_store.
  float *partials = reinterpret_cast<float *>(shared_partials) + warp * MT * NS * 128;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int ns = 0; ns < NS; ++ns)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float *out = partials + (mt * 16 + h * 8 + g) * NS * 8;
        const float lo = acc[mt][ns][2 * h], hi = acc[mt][ns][2 * h + 1];
        if constexpr (cols == 1) { // columns are rows 2t, 2t + 1 of the spread tile
          out[ns * 8 + 2 * t] = lo;
          out[ns * 8 + 2 * t + 1] = hi;
        } else {
          const float pair = lo + hi; // groups (2t) % G, then the next
          if constexpr (cols == 2) {
            out[ns * 4 + t] = pair;
          } else { // G = 4: lanes 2u, 2u + 1 hold groups 0-1 and 2-3 of row u
            const float other = __shfl_xor_sync(0xffffffffu, pair, 1);
            if ((t & 1) == 0)
              out[ns * 2 + (t >> 1)] = pair + other;
          }
        }
      }
  reduce_and_store(p, reinterpret_cast<const float *>(shared_partials), MT * NS * 128, MT * 16,
                   p.rows_per_cta, m_cta, row0,
                   [](int m_in_warp, int r_local) { return m_in_warp * NS * 8 + r_local; });
}

// --- stream path (weights once) -----------------------------------------------------------
//
// The gemv.bf16 stream kernel's structure (../gemv_bf16/gemv_bf16.cuh) over packed words: a
// persistent grid, CTA c owning the contiguous 16-row tiles [c T / C, (c + 1) T / C) over all of
// K and every activation row (rows <= NT * 8); warp W is the producer and bulk-copies the
// packed words, one copy of W x kStreamStageBytes per weight row and step, into the ring
// (weight_stream.cuh); consumer w takes block w (kStreamStageBytes = 4 chunks of 16 words per
// row) of every step and reads its words from shared memory in the fragment layout of the mma
// path (lane (g, t): words 4t..4t+3 of a chunk of rows g and g + 8; row pitch 64 mod 128
// bytes, conflict-free).
// Scales and biases (1/16 of the bytes at 4 bits and group 64) are read by the consumers with
// __ldg, issued with the activations before the wait for the stage.
// Dequantisation per weight, as the per-weight path of the mma kernel (one rounding to bf16).
// Summation order: each consumer sums its blocks in increasing K; at the end of a tile the W
// partials are added in order. A function of (bits, k, W) alone, so every stream config with W
// consumers is bit-identical per row at every row count.
constexpr int kStreamStageBytes = kStreamStepBytes; // [bytes] per weight row, consumer and step

struct StreamParams : StreamShape {
  const uint32_t *q;      // [n, k * bits / 32]
  const uint16_t *scales; // bf16 [n, k / group]
  const uint16_t *biases; // bf16 [n, k / group]
  int groups_per_row;     // k / group
  int group_shift;        // log2(group)
};

template <int BITS, int NT>
__global__ void __launch_bounds__(kStreamMaxThreads, 1)
    qmv_affine_stream_kernel(const StreamParams p) {
#if __CUDA_ARCH__ >= 900
  using L = Layout<BITS>;
  constexpr int TM = 16;
  constexpr int kChunks = kStreamStageBytes / 64; // chunks per step
  constexpr bool kXAhead = !(BITS == 4 && NT == 4);
  extern __shared__ __align__(128) uint8_t stream_shared[];
  const int consumers = p.consumer_warps;
  const StreamCta s = stream_cta_begin(stream_shared, 1, NT, consumers, p.stages, p.tiles);
  if (s.warp == consumers) { // producer: packed words only, before any wait
    stream_weights(s, reinterpret_cast<const uint8_t *>(p.q), p.n, p.k / L::kValuesPerWord * 4,
                   p.steps, consumers, TM);
    return;
  }
  // Consumers read the activations and write y: only once the previous kernel of a dependent
  // launch has completed. Every consumer waits, so the CTA completes after that kernel.
  pdl_wait();
  pdl_launch_dependents();
  const int lane = s.lane, warp = s.warp;

  // Consumer `warp`: block `warp` of every step.
  constexpr int kBlockK = kChunks * L::kChunkK; // [values] per consumer and step
  const int g = lane >> 2, t = lane & 3;
  const uint16_t *xp[NT];
  stream_activation_rows(xp, p.x, g, p.rows, p.k);
  StageCursor q;
  for (int tile = s.tile_begin; tile < s.tile_end; ++tile) {
    const int m0 = tile * TM;
    const uint16_t *sp[2], *bp[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const size_t row = static_cast<size_t>(min(m0 + h * 8 + g, p.n - 1));
      sp[h] = p.scales + row * p.groups_per_row;
      bp[h] = p.biases + row * p.groups_per_row;
    }
    float acc[1][NT][4];
    zero_accumulators(acc);
    for (int j = 0; j < p.steps; ++j, q.advance(p.stages)) {
      const int segment = (j * consumers + warp) * kBlockK; // [values]
      // Scales and biases of the step, and the first chunk's activations, before the wait.
      uint32_t s2[kChunks][2], b2[kChunks][2];
      bool in_k[kChunks];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int kk = segment + c * L::kChunkK + L::kLaneK * t;
        in_k[c] = kk < p.k; // K is a multiple of 32, a lane's range is in or out
        const int group = kk >> p.group_shift;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t sc = in_k[c] ? load_parameter(sp[h] + group) : 0u;
          const uint32_t bi = in_k[c] ? load_parameter(bp[h] + group) : 0u;
          if constexpr (BITS == 4) {
            s2[c][h] = __byte_perm(sc, 0, 0x1010);
            b2[c][h] = __byte_perm(bi, 0, 0x1010);
          } else {
            s2[c][h] = sc << 16; // fp32 bits
            b2[c][h] = bi << 16;
          }
        }
      }
      uint4 x[NT][L::kXVectors];
      auto load_x = [&](int c, uint4(&dst)[NT][L::kXVectors]) {
        const int kk = segment + c * L::kChunkK + L::kLaneK * t;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int v = 0; v < L::kXVectors; ++v)
            dst[nt][v] = in_k[c] ? load_activation(xp[nt] + kk + 8 * v) : make_uint4(0, 0, 0, 0);
      };
      load_x(0, x);
      s.ring.wait_full(q);
      const uint8_t *sw =
          s.stages_base + q.stage * s.stage_bytes + g * s.pitch + warp * kStreamStageBytes + 16 * t;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        // The next chunk's activations are loaded before this one is multiplied, except at
        // four n8 tiles (int4), where the second copy would spill: they load at use.
        [[maybe_unused]] uint4 x_next[NT][L::kXVectors];
        if constexpr (kXAhead) {
          if (c + 1 < kChunks)
            load_x(c + 1, x_next);
        } else if (c > 0) {
          load_x(c, x);
        }
        uint4 wq[2];
#pragma unroll
        for (int h = 0; h < 2; ++h)
          wq[h] = in_k[c] ? *reinterpret_cast<const uint4 *>(sw + h * 8 * s.pitch + c * 64)
                          : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int wi = 0; wi < 4; ++wi) {
          const uint32_t w0 = (&wq[0].x)[wi];
          const uint32_t w1 = (&wq[1].x)[wi];
          if constexpr (BITS == 4) {
            uint32_t a[2][4]; // [h][pair]: pairs (0,4), (1,5), (2,6), (3,7)
            a[0][0] = fma_bf16x2(int4_pair<0>(w0), s2[c][0], b2[c][0]);
            a[0][1] = fma_bf16x2(int4_pair<1>(w0), s2[c][0], b2[c][0]);
            a[0][2] = fma_bf16x2(int4_pair<2>(w0), s2[c][0], b2[c][0]);
            a[0][3] = fma_bf16x2(int4_pair<3>(w0), s2[c][0], b2[c][0]);
            a[1][0] = fma_bf16x2(int4_pair<0>(w1), s2[c][1], b2[c][1]);
            a[1][1] = fma_bf16x2(int4_pair<1>(w1), s2[c][1], b2[c][1]);
            a[1][2] = fma_bf16x2(int4_pair<2>(w1), s2[c][1], b2[c][1]);
            a[1][3] = fma_bf16x2(int4_pair<3>(w1), s2[c][1], b2[c][1]);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              const uint32_t xb0 = __byte_perm(x[nt][wi].x, x[nt][wi].z, 0x5410);
              const uint32_t xb1 = __byte_perm(x[nt][wi].x, x[nt][wi].z, 0x7632);
              const uint32_t xb2 = __byte_perm(x[nt][wi].y, x[nt][wi].w, 0x5410);
              const uint32_t xb3 = __byte_perm(x[nt][wi].y, x[nt][wi].w, 0x7632);
              mma_m16n8k16(acc[0][nt], a[0][0], a[1][0], a[0][1], a[1][1], xb0, xb1);
              mma_m16n8k16(acc[0][nt], a[0][2], a[1][2], a[0][3], a[1][3], xb2, xb3);
            }
          } else {
            const float sc0 = __uint_as_float(s2[c][0]), bi0 = __uint_as_float(b2[c][0]);
            const float sc1 = __uint_as_float(s2[c][1]), bi1 = __uint_as_float(b2[c][1]);
            const uint32_t a0 = int8_pair<0>(w0, sc0, bi0), a2 = int8_pair<2>(w0, sc0, bi0);
            const uint32_t a1 = int8_pair<0>(w1, sc1, bi1), a3 = int8_pair<2>(w1, sc1, bi1);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              const uint4 &v = x[nt][wi / 2];
              mma_m16n8k16(acc[0][nt], a0, a1, a2, a3, wi % 2 == 0 ? v.x : v.z,
                           wi % 2 == 0 ? v.y : v.w);
            }
          }
        }
        if constexpr (kXAhead) {
          if (c + 1 < kChunks)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
              for (int v = 0; v < L::kXVectors; ++v)
                x[nt][v] = x_next[nt][v];
        }
      }
      s.ring.release(q, lane);
    }
    stream_store_tile<1, NT>(s, acc, consumers, m0, p.n, p.rows, p.y);
  }
#endif
}

} // namespace hone::cuda::qmv_affine_detail

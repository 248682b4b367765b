// decode.paged device code: the split kernel, the merge kernel and the page check. Included
// only by decode_paged.cu.
//
// Work split (the read ceiling). The grid is one-dimensional, work item x hkv + KV head, so
// that the CTAs of one item's KV heads run together and read each page's rows side by side
// (a page holds its tokens x hkv x head_dim contiguously). A work item is one chunk of
// one request: chunk c of request b covers tokens [c * kv_chunk, min((c + 1) * kv_chunk,
// len[b])) (kv_chunk = 0: the whole request), items numbered request by request, so that
// item = (chunks of requests 0 .. b-1) + c. One CTA takes one item for one KV head and ALL
// G = hq / hkv query heads of it, so every KV byte is read once per step. Every warp of the
// CTA derives its item from kv_indptr alone (a warp scan of the per-request chunk counts:
// kv_chunk is a multiple of page_size, so ceil(len / kv_chunk) = ceil(pages / chunk_pages)):
// no host-built work list and no upload. Batch 1 at long context spreads over every SM
// through the chunks; the host picks kv_chunk (the plan, decode_paged_config.cpp).
//
// With kv_heads = H > 1 (a tactic field) one CTA takes H consecutive KV heads of its item: the
// grid is item x (hkv / H) + head group, and warp w serves KV head w % H.
//
// Inside a CTA, warp w takes the 16-token tiles w, w + W, w + 2W, ... of the chunk (W warps;
// with H > 1, tiles w / H, w / H + W / H, ... of its KV head).
// Each warp streams its tiles through a private cp.async ring of S stages in shared memory
// (K and V tiles, 16-byte copies, tokens past len zero-filled and never read from memory), so
// S - 1 tiles are in flight while it multiplies one, with no CTA barrier in the loop. The page
// of a tile comes from a 32-page window of kv_indices held one page per lane (plus the next
// window, loaded 32 pages ahead) and one shuffle.
//
// Per tile, with tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate):
//   S[h, t] = q[h] . k[t]    A = Q (query heads on M, rows 0-7; rows 8-15 zero), B = K tile
//                            (ldmatrix from a XOR-swizzled row-major tile), 2 n8 tiles x
//                            head_dim / 16 k-steps. Lane (g, t) holds S[head g][tokens 8n + 2t,
//                            8n + 2t + 1], the layout of the B operand of the next product.
//   online softmax per head in log2 units (x = S * scale * log2 e): m = max(m, max_t x),
//   p = 2^(x - m) rounded once to bf16; the running sum l adds the ROUNDED p, so numerator and
//   denominator use the same weights.
//   O^T[d, h] += V^T[d, t] P^T[t, h]   A = V^T (ldmatrix.trans of the V tile, head_dim / 16
//                            m16 tiles), B = P^T straight from the registers of S: no shuffle,
//                            no shared-memory round trip. Before it, O^T[., h] *= 2^(m_old -
//                            m_new), the factor fetched from the lanes of head h.
//
// Summation order, for one request and head (deterministic for a given (lengths, kv_chunk,
// warps, kv_heads); independent of the other requests of the batch):
//   1. each warp: its tiles in increasing token order, 16 tokens per step (mma k order);
//   2. the CTA: the states (m, l, O) of the warps of the head's KV head combined in warp
//      order, through shared memory reusing the rings: M = max m_w, L = sum l_w 2^(m_w - M), O = sum O_w 2^(m_w - M)
//      / L. With one chunk, O goes to o as bf16 (and lse = (M + log2 L) ln 2) directly;
//   3. else the chunk writes its partial state (O fp32 normalised, lse2 = M + log2 L in log2
//      units) to the workspace at slot = item, and the request's chunks are combined per query
//      head in one fixed order: part w of 4 (kMergeWarps) takes chunks w, w + 4, ... in
//      increasing order with an online log-sum-exp (merge_part), then the 4 part states are
//      combined in part order (merge_finish). Who runs it does not change the arithmetic:
//      a. fused_merge=1: the CTA that writes the LAST partial state of its (request,
//         KV head) merges the G query heads of that KV head, its warps taking the (head,
//         part) pairs. Arrival: every thread's partial stores, __threadfence, a CTA barrier,
//         then one atomicAdd on the (request, KV head) counter (release); the CTA that sees
//         chunks - 1 fences (acquire) and reads the other CTAs' states with ld.global.cg
//         (L2, coherent), never through the non-coherent path. It puts the counter back to 0,
//         so the counters stay zero between launches (a replayed graph needs no memset).
//      b. the default: a second kernel, one CTA per (request, query head), warp w taking
//         part w. It is a programmatic dependent launch: its CTAs become resident while the
//         split kernel's last wave runs (griddepcontrol.launch_dependents at the split
//         kernel's start) and wait (griddepcontrol.wait) for it to complete before reading.
//      Both give bit-identical o and lse (the merge helpers use explicit fma / mul).
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/common/ptx.cuh"

namespace hone::cuda::decode_paged_detail {

using kernel_detail::bf16_hi;
using kernel_detail::bf16_lo;
using kernel_detail::mma_m16n8k16;
using kernel_detail::pdl_launch_dependents;
using kernel_detail::pdl_wait;
using kernel_detail::prefetch_line_l2;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kTile = 16;        // tokens per tile
constexpr int kMaxWarps = 8;     // warps per CTA
constexpr int kMergeWarps = 4;   // warps of a merge CTA
constexpr int kMergeUnroll = 4;  // partial states in flight per merge warp (merge kernel)
// ... per warp of the fused merge: each of its warps runs several (head, part) pairs one after
// the other, so each pair should take as few L2 round trips as possible.
constexpr int kFusedMergeUnroll = 8;
constexpr int kMaxHeads = 8;     // query heads per KV head (rows 0-7 of the m16 tile)
constexpr float kLn2 = 0.693147180559945309f;

// Sizes of one head_dim. kStages must equal decode_paged_stages(D) (static_assert in the .cu).
template <int D> struct Traits {
  static constexpr int kChunks = D / 8;                  // 16-byte chunks per K or V row
  static constexpr int kStages = D <= 64 ? 4 : D <= 128 ? 3 : 2;
  static constexpr int kKSteps = D / 16;                 // k16 steps of q . k
  static constexpr int kMTiles = D / 16;                 // m16 tiles of O^T
  static constexpr int kCopies = kTile * kChunks / 32;   // 16-byte copies per lane per tile
  static constexpr int kTileElems = kTile * D;           // bf16 of one K (or V) tile
  static constexpr int kStageElems = 2 * kTileElems;     // K tile then V tile
  static constexpr int kWarpRingElems = kStages * kStageElems;
  static constexpr int kRedStride = D + 4;               // floats per head row of a warp's O
  static constexpr int kPrefetch = D <= 64 ? 128 : 256;  // [bytes] L2 prefetch of a K/V row
  static_assert(kCopies >= 1 && kTile * kChunks % 32 == 0, "tile copies per lane");
  // The combine stage reuses a warp's ring for its [8 heads][D + 4] fp32 output.
  static_assert(kMaxHeads * kRedStride * 4 <= kWarpRingElems * 2, "ring holds a warp's O");
  // The fused merge reuses the rings for [cta_heads x 8 heads][kMergeWarps][D] fp32: one warp's
  // ring per KV head at most (cta_heads <= warps).
  static_assert(kMaxHeads * kMergeWarps * D * 4 <= kWarpRingElems * 2,
                "a warp's ring holds one KV head's merge part states");
};

struct Params {
  const uint16_t *q;                // bf16 [batch, hq, D]
  const uint16_t *k_cache;          // bf16 [num_pages, page_size, hkv, D]
  const uint16_t *v_cache;          // bf16 [num_pages, page_size, hkv, D]
  const int32_t *kv_indptr;         // [batch + 1]
  const int32_t *kv_indices;        // [kv_indptr[batch]]
  const int32_t *kv_last_page_len;  // [batch]
  uint16_t *o;                      // bf16 [batch, hq, D]
  float *lse;                       // [batch, hq] natural log, or nullptr
  float *partial_lse;               // [items, hq] log2 units (merge only)
  float *partial_o;                 // [items, hq, D] (merge only)
  int32_t *counters;                // [batch, hkv] arrivals, zero between launches; nullptr:
                                    // the merge kernel combines the partial states
  int batch, hq, hkv, group;        // group = hq / hkv
  int page_size, page_shift;        // page_size = 1 << page_shift
  int chunk_pages;                  // kv_chunk / page_size; 0: one chunk per request
  int cta_heads;                    // KV heads per CTA (kv_heads), dividing hkv and warps
  float scale_log2;                 // softmax scale x log2(e)
  int prefetch_tiles;               // > 0 (a dependent launch): each warp asks L2 for its first
                                    // prefetch_tiles K and V tiles before griddepcontrol.wait
};

// --- PTX ------------------------------------------------------------------------------------

// 16-byte copy global -> shared, L2 only; src_bytes 0 writes zeros and reads nothing.
template <int PREFETCH>
__device__ __forceinline__ void copy_tile_async(void *dst, const void *src, int src_bytes) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  if constexpr (PREFETCH == 256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Four 8x8 bf16 matrices; lanes 8i .. 8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *smem) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *smem) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
}

// 2^x; 2^-inf = +0.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t *>(&v);
}

// %ctaid.x, read afresh (volatile: the compiler neither caches nor hoists it).
__device__ __forceinline__ unsigned cta_x() {
  unsigned v;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(v));
  return v;
}

// --- work items -------------------------------------------------------------------------------

__device__ __forceinline__ int request_chunks(int pages, int chunk_pages) {
  return pages <= 0 ? 0 : chunk_pages > 0 ? (pages + chunk_pages - 1) / chunk_pages : 1;
}

struct Item {
  bool valid;
  int b;          // request
  int chunk;      // chunk of the request
  int chunks;     // chunks of the request
  int page_begin; // kv_indptr[b]
  int pages;      // pages of the request
  int last;       // kv_last_page_len[b]
};

// The request and chunk of work item `item` (warp-uniform): a warp scan over 32 requests at a
// time of the chunk counts from kv_indptr. valid = false past the last item.
__device__ __forceinline__ Item locate_item(const Params &p, int item) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int before = 0; // items of the requests before `base`
  for (int base = 0; base < p.batch; base += 32) {
    const int r = base + lane;
    int begin = 0, pages = 0, last = 0;
    if (r < p.batch) {
      begin = __ldg(p.kv_indptr + r);
      pages = __ldg(p.kv_indptr + r + 1) - begin;
      last = __ldg(p.kv_last_page_len + r);
    }
    const int chunks = request_chunks(pages, p.chunk_pages);
    int inclusive = chunks;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(kFullMask, inclusive, d);
      if (lane >= d)
        inclusive += v;
    }
    const unsigned hit = __ballot_sync(kFullMask, chunks > 0 && before + inclusive > item);
    if (hit != 0) {
      const int src = __ffs(static_cast<int>(hit)) - 1;
      Item it;
      it.valid = true;
      it.b = base + src;
      it.chunks = __shfl_sync(kFullMask, chunks, src);
      it.chunk = item - (before + __shfl_sync(kFullMask, inclusive, src) - it.chunks);
      it.page_begin = __shfl_sync(kFullMask, begin, src);
      it.pages = __shfl_sync(kFullMask, pages, src);
      it.last = __shfl_sync(kFullMask, last, src);
      return it;
    }
    before += __shfl_sync(kFullMask, inclusive, 31);
  }
  Item none{};
  none.valid = false;
  return none;
}

// Items of the requests before b, and of b (warp-uniform).
__device__ __forceinline__ void request_items(const Params &p, int b, int &before, int &chunks) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  before = 0;
  for (int base = 0; base < b; base += 32) {
    const int r = base + lane;
    int n = 0;
    if (r < b)
      n = request_chunks(__ldg(p.kv_indptr + r + 1) - __ldg(p.kv_indptr + r), p.chunk_pages);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
      n += __shfl_xor_sync(kFullMask, n, d);
    before += n;
  }
  chunks = request_chunks(__ldg(p.kv_indptr + b + 1) - __ldg(p.kv_indptr + b), p.chunk_pages);
}

// --- merge (shared by the fused merge and the merge kernel) ----------------------------------------

// Part `part` of the merge of one request and query head: chunks part, part + kMergeWarps, ...
// of the request (items first .. first + chunks - 1) in increasing order, online log-sum-exp in
// log2 units; lane holds floats lane x D/32 .. + D/32 - 1 of the running sum. Partial states
// written by other CTAs of this grid are read with ld.global.cg (L2), UNROLL in flight; UNROLL
// changes only how loads are batched, not the arithmetic.
template <int D> struct MergePart {
  float m;          // running max of the chunks' lse2
  float s;          // sum of 2^(lse2 - m)
  float acc[D / 32]; // sum of O 2^(lse2 - m)
};

template <int D, int UNROLL>
__device__ __forceinline__ MergePart<D> merge_part(const Params &p, int first, int chunks,
                                                   int head, int part, int lane) {
  constexpr int kPer = D / 32; // floats of a state per lane: 2, 4 or 8
  MergePart<D> r;
  r.m = -INFINITY;
  r.s = 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    r.acc[i] = 0.0f;
  for (int c0 = part; c0 < chunks; c0 += kMergeWarps * UNROLL) {
    float lse[UNROLL], v[UNROLL][kPer];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { // loads first: UNROLL states in flight
      const int c = c0 + kMergeWarps * u;
      lse[u] = -INFINITY;
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        v[u][i] = 0.0f;
      if (c < chunks) {
        const size_t state = static_cast<size_t>(first + c) * p.hq + head;
        lse[u] = __ldcg(p.partial_lse + state);
        const float *src = p.partial_o + state * D + lane * kPer;
        if constexpr (kPer % 4 == 0) { // 16-byte loads at head_dim 128 and 256
#pragma unroll
          for (int i = 0; i < kPer; i += 4) {
            const float4 x = __ldcg(reinterpret_cast<const float4 *>(src + i));
            v[u][i] = x.x;
            v[u][i + 1] = x.y;
            v[u][i + 2] = x.z;
            v[u][i + 3] = x.w;
          }
        } else {
          const float2 x = __ldcg(reinterpret_cast<const float2 *>(src));
          v[u][0] = x.x;
          v[u][1] = x.y;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (c0 + kMergeWarps * u >= chunks)
        break;
      const float m_new = fmaxf(r.m, lse[u]);
      const float a = exp2_approx(r.m - m_new), w = exp2_approx(lse[u] - m_new);
      r.s = __fmaf_rn(r.s, a, w);
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        r.acc[i] = __fmaf_rn(r.acc[i], a, __fmul_rn(v[u][i], w));
      r.m = m_new;
    }
  }
  return r;
}

// Combines the kMergeWarps part states of one request and query head in part order and writes
// o[b, head, d .. d + 3] (and lse at d == 0). m4, s4: [kMergeWarps]; acc4: [kMergeWarps][D].
template <int D>
__device__ __forceinline__ void merge_finish(const Params &p, int b, int head, const float *m4,
                                             const float *s4, const float *acc4, int d) {
  float big = -INFINITY;
#pragma unroll
  for (int w = 0; w < kMergeWarps; ++w)
    big = fmaxf(big, m4[w]);
  float sum = 0.0f, wt[kMergeWarps];
#pragma unroll
  for (int w = 0; w < kMergeWarps; ++w) { // parts without chunks: m = -inf, weight 0
    wt[w] = exp2_approx(m4[w] - big);
    sum = __fmaf_rn(s4[w], wt[w], sum);
  }
  const float inv = 1.0f / sum;
  float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int w = 0; w < kMergeWarps; ++w) {
    const float4 x = *reinterpret_cast<const float4 *>(acc4 + w * D + d);
    r[0] = __fmaf_rn(x.x, wt[w], r[0]);
    r[1] = __fmaf_rn(x.y, wt[w], r[1]);
    r[2] = __fmaf_rn(x.z, wt[w], r[2]);
    r[3] = __fmaf_rn(x.w, wt[w], r[3]);
  }
  const size_t out = (static_cast<size_t>(b) * p.hq + head) * D;
  uint2 packed;
  packed.x = pack_bf16x2(r[0] * inv, r[1] * inv);
  packed.y = pack_bf16x2(r[2] * inv, r[3] * inv);
  *reinterpret_cast<uint2 *>(p.o + out + d) = packed;
  if (p.lse != nullptr && d == 0)
    p.lse[static_cast<size_t>(b) * p.hq + head] = (big + log2f(sum)) * kLn2;
}

// --- split kernel -----------------------------------------------------------------------------

// Before griddepcontrol.wait (p.prefetch_tiles > 0): the warp asks L2 for the K and V rows of
// its first p.prefetch_tiles tiles of item `it` and KV head `kv_head`, in the order it will
// copy them, lane l taking token row l % 16 of K (l < 16) or V, one 128-byte line at a time
// (a row is 128, 256 or 512 bytes, aligned to its size). Only tiles inside the chunk's
// first 32 pages (one page window). A prefetch reads no value, so the new token's row, which
// the kernel before may still be writing, can be among them: what the copies read after the
// wait is unchanged.
template <int D>
__device__ __forceinline__ void prefetch_first_tiles(const Params &p, const Item &it, int kv_head,
                                                     int head_warp, int head_warps, int lane) {
  const int len = (it.pages - 1) * p.page_size + it.last;
  const int chunk_tokens = p.chunk_pages > 0 ? p.chunk_pages << p.page_shift : len;
  const int t0 = it.chunk * chunk_tokens;
  const int n_tokens = min(chunk_tokens, len - t0);
  const int chunk_pages = (n_tokens + p.page_size - 1) >> p.page_shift;
  const int32_t *pages = p.kv_indices + it.page_begin + (t0 >> p.page_shift);
  const int win = lane < chunk_pages ? __ldg(pages + lane) : 0;
  const size_t token_stride = static_cast<size_t>(p.hkv) * D;
  const int row = lane & (kTile - 1);
  const uint16_t *head = (lane < kTile ? p.k_cache : p.v_cache) + static_cast<size_t>(kv_head) * D;
  for (int k = 0; k < p.prefetch_tiles; ++k) {
    const int tok0 = (head_warp + k * head_warps) * kTile; // warp-uniform
    const int page_local = tok0 >> p.page_shift;
    if (tok0 >= n_tokens || page_local >= 32)
      break;
    const int page = __shfl_sync(kFullMask, win, page_local);
    if (tok0 + row < n_tokens) {
      const uint16_t *src =
          head + (static_cast<size_t>(page) * p.page_size + ((tok0 + row) & (p.page_size - 1))) *
                     token_stride;
#pragma unroll
      for (int line = 0; line < D * 2 / 128; ++line)
        prefetch_line_l2(src + line * 64);
    }
  }
}

template <int D> __global__ void __launch_bounds__(kMaxWarps * 32) split_kernel(const Params p) {
  using T = Traits<D>;
  extern __shared__ __align__(128) uint16_t rings[]; // [warps][stages][K tile, V tile]
  __shared__ float warp_m[kMaxWarps][kMaxHeads], warp_l[kMaxWarps][kMaxHeads];
  __shared__ int last_arrival; // fused merge: this CTA wrote its request's last partial state
  // Fused merge: part states (m, s) of [cta_heads x group query heads][kMergeWarps].
  __shared__ float part_m[kMaxWarps * kMaxHeads * kMergeWarps];
  __shared__ float part_s[kMaxWarps * kMaxHeads * kMergeWarps];

  // As a dependent launch (a link of a decode step) this kernel reads q and the new token's
  // K / V, which the kernels before it write: it waits for them before anything else (a no-op
  // otherwise), or, with p.prefetch_tiles > 0, after it has read its page table and asked L2
  // for its first K and V tiles. The merge kernel (if any) may launch once every CTA of this
  // grid has started; it waits for this grid's completion before it reads anything written
  // here.
  const bool early = p.prefetch_tiles > 0;
  if (!early) {
    pdl_wait();
    pdl_launch_dependents();
  }

  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  const int g = lane >> 2, t = lane & 3;
  // KV heads kv_first .. kv_first + cta_heads - 1; warp w serves kv_first + w % cta_heads and
  // takes every (warps / cta_heads)-th tile of the chunk from tile w / cta_heads.
  const unsigned head_groups = static_cast<unsigned>(p.hkv / p.cta_heads);
  const int kv_first = static_cast<int>(blockIdx.x % head_groups) * p.cta_heads;
  const int item_index = static_cast<int>(blockIdx.x / head_groups);
  const int kv_head = kv_first + warp % p.cta_heads;
  const int head_warp = warp / p.cta_heads;       // rank among the warps of kv_head
  const int head_warps = warps / p.cta_heads;     // warps per KV head
  const Item it = locate_item(p, item_index);
  if (early) {
    if (it.valid)
      prefetch_first_tiles<D>(p, it, kv_head, head_warp, head_warps, lane);
    pdl_wait();
    pdl_launch_dependents();
  }
  if (!it.valid) // the same for every warp: the whole CTA leaves
    return;

  const int len = (it.pages - 1) * p.page_size + it.last;
  const int chunk_tokens = p.chunk_pages > 0 ? p.chunk_pages << p.page_shift : len;
  const int t0 = it.chunk * chunk_tokens; // page aligned
  const int n_tokens = min(chunk_tokens, len - t0);
  const int tiles = (n_tokens + kTile - 1) / kTile;
  const int my_tiles = head_warp < tiles ? (tiles - 1 - head_warp) / head_warps + 1 : 0;
  const int chunk_pages = (n_tokens + p.page_size - 1) >> p.page_shift;
  const int32_t *pages = p.kv_indices + it.page_begin + (t0 >> p.page_shift);

  // Q as the A operand, rows g < group (rows 8-15 and g >= group are zero): a0 = q[g][16s + 2t,
  // +1], a2 = q[g][16s + 8 + 2t, +1].
  uint32_t qa[T::kKSteps][2];
  {
    const bool live = g < p.group;
    const uint16_t *q_row =
        p.q + (static_cast<size_t>(it.b) * p.hq + kv_head * p.group + (live ? g : 0)) * D;
#pragma unroll
    for (int s = 0; s < T::kKSteps; ++s) {
      qa[s][0] = live ? __ldg(reinterpret_cast<const uint32_t *>(q_row + 16 * s + 2 * t)) : 0u;
      qa[s][1] = live ? __ldg(reinterpret_cast<const uint32_t *>(q_row + 16 * s + 8 + 2 * t)) : 0u;
    }
  }

  // Page window: lane i holds the page of chunk-local page win_base + i, and of the next window.
  int win_base = 0;
  int win = lane < chunk_pages ? __ldg(pages + lane) : 0;
  int win_next = 32 + lane < chunk_pages ? __ldg(pages + 32 + lane) : 0;

  uint16_t *ring = rings + static_cast<size_t>(warp) * T::kWarpRingElems;
  const size_t token_stride = static_cast<size_t>(p.hkv) * D; // elements between tokens
  const uint16_t *k_head = p.k_cache + static_cast<size_t>(kv_head) * D;
  const uint16_t *v_head = p.v_cache + static_cast<size_t>(kv_head) * D;

  // Enqueues my k-th tile (chunk tile head_warp + k * head_warps) into ring slot k % kStages.
  const auto issue = [&](int k) {
    const int tok = (head_warp + k * head_warps) * kTile; // chunk-local, inside one page
    const int page_local = tok >> p.page_shift;
    if (page_local - win_base >= 32) { // at most one window per tile: 16 x 8 / 16 = 8 pages
      win = win_next;
      win_base += 32;
      win_next = win_base + 32 + lane < chunk_pages ? __ldg(pages + win_base + 32 + lane) : 0;
    }
    const int page = __shfl_sync(kFullMask, win, page_local - win_base);
    const int valid = min(kTile, n_tokens - tok);
    const size_t row0 =
        (static_cast<size_t>(page) * p.page_size + (tok & (p.page_size - 1))) * token_stride;
    uint16_t *k_dst = ring + (k % T::kStages) * T::kStageElems;
    uint16_t *v_dst = k_dst + T::kTileElems;
#pragma unroll
    for (int i = 0; i < T::kCopies; ++i) {
      const int c = lane + 32 * i;
      const int row = c / T::kChunks, col = c % T::kChunks;
      const bool live = row < valid;
      const size_t src = row0 + static_cast<size_t>(live ? row : 0) * token_stride + col * 8;
      const int dst = row * D + ((col ^ (row & 7)) << 3);
      copy_tile_async<T::kPrefetch>(k_dst + dst, k_head + src, live ? 16 : 0);
      copy_tile_async<T::kPrefetch>(v_dst + dst, v_head + src, live ? 16 : 0);
    }
  };

  float m_run = -INFINITY; // running max of head g, log2 units
  float l_run = 0.0f;      // running sum of the rounded p of head g (this lane's tokens)
  float o[T::kMTiles][4];  // O^T: [m tile][d g, h 2t | d g, h 2t+1 | d g+8, h 2t | d g+8, h 2t+1]
#pragma unroll
  for (int m = 0; m < T::kMTiles; ++m)
    o[m][0] = o[m][1] = o[m][2] = o[m][3] = 0.0f;

  // ldmatrix row addresses: matrix i = lane / 8 holds tokens 8 (i / 2) .. +7, 16-byte column
  // 2s + i % 2 of step s (K: b0, b1 of n tiles 0, 1; V^T: a0 .. a3 of one m16 tile).
  const int ld_token = (lane >> 4) * 8 + (lane & 7);
  const int ld_half = (lane >> 3) & 1;

#pragma unroll
  for (int k = 0; k < T::kStages - 1; ++k) {
    if (k < my_tiles)
      issue(k);
    copy_commit();
  }
  for (int k = 0; k < my_tiles; ++k) {
    if (k + T::kStages - 1 < my_tiles)
      issue(k + T::kStages - 1);
    copy_commit();
    copy_wait<T::kStages - 1>();
    __syncwarp();

    const uint16_t *k_tile = ring + (k % T::kStages) * T::kStageElems;
    const uint16_t *v_tile = k_tile + T::kTileElems;
    const int valid = min(kTile, n_tokens - (head_warp + k * head_warps) * kTile);

    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int step = 0; step < T::kKSteps; ++step) {
      uint32_t kb[4];
      const int col = 2 * step + ld_half;
      ldmatrix_x4(kb, k_tile + ld_token * D + ((col ^ (ld_token & 7)) << 3));
      mma_m16n8k16(s[0], qa[step][0], 0u, qa[step][1], 0u, kb[0], kb[1]);
      mma_m16n8k16(s[1], qa[step][0], 0u, qa[step][1], 0u, kb[2], kb[3]);
    }
    // Head g, tokens 8n + 2t + e; past `valid` (zero-filled rows) they weigh nothing.
    float x[4];
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        x[2 * n + e] = 8 * n + 2 * t + e < valid ? s[n][e] * p.scale_log2 : -INFINITY;
    float tile_max = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 2));
    const float m_new = fmaxf(m_run, tile_max); // finite: every tile has a valid token
    const float alpha = exp2_approx(m_run - m_new);
    const uint32_t p0 = pack_bf16x2(exp2_approx(x[0] - m_new), exp2_approx(x[1] - m_new));
    const uint32_t p1 = pack_bf16x2(exp2_approx(x[2] - m_new), exp2_approx(x[3] - m_new));
    l_run = l_run * alpha + ((bf16_lo(p0) + bf16_hi(p0)) + (bf16_lo(p1) + bf16_hi(p1)));
    m_run = m_new;
    // O^T columns are heads 2t and 2t + 1, whose factors live in lanes 4 (2t) and 4 (2t + 1).
    const float alpha_even = __shfl_sync(kFullMask, alpha, 8 * t);
    const float alpha_odd = __shfl_sync(kFullMask, alpha, 8 * t + 4);
#pragma unroll
    for (int m = 0; m < T::kMTiles; ++m) {
      uint32_t va[4];
      const int col = 2 * m + ld_half;
      ldmatrix_x4_trans(va, v_tile + ld_token * D + ((col ^ (ld_token & 7)) << 3));
      o[m][0] *= alpha_even;
      o[m][1] *= alpha_odd;
      o[m][2] *= alpha_even;
      o[m][3] *= alpha_odd;
      mma_m16n8k16(o[m], va[0], va[1], va[2], va[3], p0, p1);
    }
    __syncwarp(); // every lane's ldmatrix of this slot is done before it is refilled
  }
  copy_wait<0>();
  l_run += __shfl_xor_sync(kFullMask, l_run, 1);
  l_run += __shfl_xor_sync(kFullMask, l_run, 2);

  // Combine the warps: each warp leaves (m, l) per head and its O in its own ring. The CTA's
  // indices are read again here rather than kept in registers through the loop.
  const int kv_first_e = static_cast<int>(cta_x() % head_groups) * p.cta_heads;
  const int item_e = static_cast<int>(cta_x() / head_groups);
  if (t == 0) {
    warp_m[warp][g] = m_run;
    warp_l[warp][g] = l_run;
  }
  float *red = reinterpret_cast<float *>(ring); // [8 heads][kRedStride]
#pragma unroll
  for (int m = 0; m < T::kMTiles; ++m) {
    const int d = 16 * m + g;
    red[(2 * t) * T::kRedStride + d] = o[m][0];
    red[(2 * t + 1) * T::kRedStride + d] = o[m][1];
    red[(2 * t) * T::kRedStride + d + 8] = o[m][2];
    red[(2 * t + 1) * T::kRedStride + d + 8] = o[m][3];
  }
  __syncthreads();

  // Query head kv_first x group + e / (D / 4) of the CTA: its KV head's warps in warp order.
  const bool direct = it.chunks == 1;
  for (int e = static_cast<int>(threadIdx.x); e < p.cta_heads * p.group * (D / 4);
       e += static_cast<int>(blockDim.x)) {
    const int cta_head = e / (D / 4), d = (e % (D / 4)) * 4;
    const int kv_local = cta_head / p.group, h = cta_head % p.group;
    float big = -INFINITY;
    for (int w = kv_local; w < warps; w += p.cta_heads)
      big = fmaxf(big, warp_m[w][h]);
    float sum = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int w = kv_local; w < warps; w += p.cta_heads) { // no tiles: m = -inf, weight 0
      const float wt = exp2_approx(warp_m[w][h] - big);
      sum += warp_l[w][h] * wt;
      const float4 v = *reinterpret_cast<const float4 *>(
          reinterpret_cast<const float *>(rings + static_cast<size_t>(w) * T::kWarpRingElems) +
          h * T::kRedStride + d);
      acc.x += v.x * wt;
      acc.y += v.y * wt;
      acc.z += v.z * wt;
      acc.w += v.w * wt;
    }
    const float inv = 1.0f / sum;
    const int head = kv_first_e * p.group + cta_head;
    if (direct) {
      uint2 packed;
      packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
      packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
      *reinterpret_cast<uint2 *>(p.o + (static_cast<size_t>(it.b) * p.hq + head) * D + d) = packed;
      if (p.lse != nullptr && d == 0)
        p.lse[static_cast<size_t>(it.b) * p.hq + head] = (big + log2f(sum)) * kLn2;
    } else {
      const size_t state = static_cast<size_t>(item_e) * p.hq + head;
      *reinterpret_cast<float4 *>(p.partial_o + state * D + d) =
          make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
      if (d == 0)
        p.partial_lse[state] = big + log2f(sum);
    }
  }
  if (direct || p.counters == nullptr)
    return;

  // Fused merge: count this chunk's arrival; the last CTA of (request, KV heads) merges. The
  // counter of (request, kv_first) serves the CTA's cta_heads KV heads.
  __threadfence(); // release: this thread's partial stores before the arrival below
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t *counter = p.counters + static_cast<size_t>(it.b) * p.hkv + kv_first_e;
    const bool last = atomicAdd(counter, 1) == it.chunks - 1;
    if (last) {
      atomicExch(counter, 0); // every chunk has arrived: ready for the next launch
      __threadfence();        // acquire: the other CTAs' partial states after their arrivals
    }
    last_arrival = last;
  }
  __syncthreads();
  if (!last_arrival)
    return;

  constexpr int kPer = D / 32;
  // [cta_heads x group][kMergeWarps][D]: at most a warp's ring per KV head (static_assert).
  float *part_acc = reinterpret_cast<float *>(rings);
  const int first = item_e - it.chunk;
  const int cta_query_heads = p.cta_heads * p.group;
  for (int j = warp; j < cta_query_heads * kMergeWarps; j += warps) { // head x parts + part
    const MergePart<D> part =
        merge_part<D, kFusedMergeUnroll>(p, first, it.chunks,
                                         kv_first_e * p.group + j / kMergeWarps,
                                         j % kMergeWarps, lane);
    if (lane == 0) {
      part_m[j] = part.m;
      part_s[j] = part.s;
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      part_acc[j * D + lane * kPer + i] = part.acc[i];
  }
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < cta_query_heads * (D / 4);
       e += static_cast<int>(blockDim.x)) {
    const int h = e / (D / 4), d = (e % (D / 4)) * 4;
    merge_finish<D>(p, it.b, kv_first_e * p.group + h, part_m + h * kMergeWarps,
                    part_s + h * kMergeWarps, part_acc + h * kMergeWarps * D, d);
  }
}

// --- merge kernel -----------------------------------------------------------------------------

// The default merge (fused_merge=0): one CTA per (request, query head), warp w taking part w.
template <int D> __global__ void __launch_bounds__(kMergeWarps * 32) merge_kernel(const Params p) {
  constexpr int kPer = D / 32;
  __shared__ float warp_m[kMergeWarps], warp_s[kMergeWarps];
  __shared__ __align__(16) float warp_acc[kMergeWarps][D];

  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int b = static_cast<int>(blockIdx.x), head = static_cast<int>(blockIdx.y);
  int before = 0, chunks = 0;
  request_items(p, b, before, chunks);
  if (chunks <= 1)
    return;
  // The split kernel's partial states are complete and visible after this (before sm_90 the
  // merge is an ordinary launch, ordered by the stream).
  pdl_wait();

  const MergePart<D> part = merge_part<D, kMergeUnroll>(p, before, chunks, head, warp, lane);
  if (lane == 0) {
    warp_m[warp] = part.m;
    warp_s[warp] = part.s;
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    warp_acc[warp][lane * kPer + i] = part.acc[i];
  __syncthreads();
  for (int d = 4 * static_cast<int>(threadIdx.x); d < D; d += 4 * kMergeWarps * 32)
    merge_finish<D>(p, b, head, warp_m, warp_s, &warp_acc[0][0], d);
}

// --- page check -----------------------------------------------------------------------------

// Records in *first_bad the smallest position of kv_indices[begin, end) whose page is outside
// [0, num_pages).
__global__ void check_pages_kernel(const int32_t *kv_indices, int64_t begin, int64_t end,
                                   int num_pages, int32_t *first_bad) {
  for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t page = kv_indices[i];
    if (page < 0 || page >= num_pages)
      atomicMin(first_bad, static_cast<int32_t>(i));
  }
}

} // namespace hone::cuda::decode_paged_detail

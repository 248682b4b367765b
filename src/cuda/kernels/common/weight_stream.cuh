// The weights-once stream shared by the GEMV-family "stream" kernels (gemv.bf16, qmv.affine):
// mbarrier and bulk-copy PTX helpers and a ring of shared-memory stages guarded by full / empty
// mbarriers. One producer warp fills stages with Hopper bulk copies
// (cp.async.bulk ... mbarrier::complete_tx::bytes), consumer warps read them and hand them
// back. Device code only (sm_90; the helpers compile to nothing below it). Included by the
// kernels' .cuh files.
//
//   StageRing ring{full, empty, stages};   // barriers in shared memory
//   StageCursor q;                          // per thread, advanced once per step
//   producer: ring.acquire_empty(q); ring.expect(q, bytes);
//             bulk_copy_to_shared(dst(q.stage), src, bytes, ring.full_at(q), policy);
//   consumer: ring.wait_full(q); ... read stage q.stage ...; ring.release(q, lane);  // each thread
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cuda_bf16.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/common/split_k_reduce.cuh"
#include "cuda/kernels/common/weight_stream.h"

namespace hone::cuda::kernel_detail {

__device__ __forceinline__ uint32_t shared_address(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// REQUIRES: one thread initialises each barrier, then the CTA synchronises before any use.
__device__ __forceinline__ void mbarrier_init(uint64_t *bar, uint32_t arrivals) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals)
               : "memory");
#endif
}

// Makes mbarrier.init visible to the async proxy (the bulk copies that complete on it).
__device__ __forceinline__ void mbarrier_init_fence() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival that also expects `bytes` more of transaction (bulk-copy) completions this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t *bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
#endif
}

// Spins until the phase of parity `parity` of `bar` has completed. On a fresh barrier the phase
// of parity 1 counts as completed (the one before phase 0).
__device__ __forceinline__ void mbarrier_wait(uint64_t *bar, uint32_t parity) {
#if __CUDA_ARCH__ >= 900
  const uint32_t addr = shared_address(bar);
  uint32_t done = 0;
  do {
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n"
                 "}\n"
                 : "=r"(done)
                 : "r"(addr), "r"(parity)
                 : "memory");
  } while (!done);
#endif
}

// Bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) from global memory to
// this CTA's shared memory; completes `bytes` of transaction on `bar`. Weights are read once:
// the L2 policy is evict-first.
__device__ __forceinline__ void bulk_copy_to_shared(void *dst, const void *src, uint32_t bytes,
                                                    uint64_t *bar, uint64_t policy) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
               "[%0], [%1], %2, [%3], %4;" ::"r"(shared_address(dst)),
               "l"(src), "r"(bytes), "r"(shared_address(bar)), "l"(policy)
               : "memory");
#endif
}

// TMA: box (c0, c1) of the 2-D tensor map `map` (a __grid_constant__ kernel parameter) into this
// CTA's shared memory at `dst`; completes the box's bytes of transaction on `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1,
                                            uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(shared_address(bar))
               : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// An L2 cache policy for data read once (createpolicy ... evict_first).
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

// Orders this thread's prior generic-proxy accesses to shared memory with later async-proxy
// accesses (bulk copies) that synchronise with it.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// Consumer-only barrier (named barrier `id`, `threads` threads): the producer warp never joins.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Where the CTA's stream is: step q (0, 1, 2, ... over the CTA's whole stream) uses stage
// q % stages in its (q / stages)-th fill, whose parity is `phase`. Kept as a running pair, so
// that no step pays for an integer division by the runtime ring depth.
struct StageCursor {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance(int stages) {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// A ring of `stages` shared-memory stages. full[s]: one producer arrival plus the stage's
// bytes; empty[s]: one arrival per consumer thread.
struct StageRing {
  uint64_t *full;
  uint64_t *empty;
  int stages;

  __device__ __forceinline__ uint64_t *full_at(const StageCursor &q) const {
    return full + q.stage;
  }
  // REQUIRES: one thread per CTA, then a CTA barrier before the mbarriers are used.
  // `arrivals_per_warp`: 32 for release() (every consumer thread), 1 for release_warp().
  __device__ __forceinline__ void init(int consumer_warps, int arrivals_per_warp = 32) const {
    for (int s = 0; s < stages; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, static_cast<uint32_t>(consumer_warps * arrivals_per_warp));
    }
    mbarrier_init_fence();
  }
  // Producer: waits until the consumers released the previous fill of q's stage (at once for
  // the first fill: the phase before phase 0 counts as completed).
  __device__ __forceinline__ void acquire_empty(const StageCursor &q) const {
    mbarrier_wait(empty + q.stage, q.phase ^ 1u);
  }
  // Producer (one lane): announces `bytes` of bulk copies for step q.
  __device__ __forceinline__ void expect(const StageCursor &q, uint32_t bytes) const {
    mbarrier_arrive_expect_tx(full + q.stage, bytes);
  }
  // Consumer: waits until step q's copies have landed.
  __device__ __forceinline__ void wait_full(const StageCursor &q) const {
    mbarrier_wait(full + q.stage, q.phase);
  }
  // Consumer thread: hands step q's stage back once its own reads of it are done. Every
  // consumer thread arrives, after a proxy fence: its generic-proxy reads of the stage are
  // ordered before the producer's next bulk copy (async proxy) into it.
  __device__ __forceinline__ void release(const StageCursor &q, int /*lane*/) const {
    fence_proxy_async_shared();
    mbarrier_arrive(empty + q.stage);
  }
  // Consumer warp (every lane calls it; the ring initialised with one arrival per warp): hands
  // step q's stage back with one arrival once every lane's reads of it are done. The reads are
  // loads whose values the warp has used, the __syncwarp orders every lane before the arrival,
  // and the arrival (release) and the producer's wait (acquire) order them before the next TMA
  // write of the stage; as CUTLASS's TMA pipelines, no proxy fence: that one orders generic
  // writes before async-proxy reads, and cost a fence per thread and step.
  __device__ __forceinline__ void release_warp(const StageCursor &q, int lane) const {
    __syncwarp();
    if (lane == 0)
      mbarrier_arrive(empty + q.stage);
  }
};

// --- the persistent weight stream of a CTA --------------------------------------------------
//
// A persistent grid: CTA c of C owns the contiguous weight-row tiles [c T / C, (c + 1) T / C) of
// T tiles of `tile_rows` rows, over all of K and every activation row, so every weight byte is
// read from DRAM once per call. Warp W of the CTA is the producer (stream_weights): its lanes
// copy each tile in steps of W x kStreamStepBytes of every row, one bulk copy per row and step,
// into the ring; warps 0..W-1 are consumers, consumer w taking block w of every step. At the end
// of a tile the consumers' fp32 partials are added in consumer order (stream_store_tile).
constexpr int kStreamBarrierBytes = 256;  // full and empty mbarriers, <= 16 stages
constexpr int kStreamMaxThreads = 9 * 32; // up to 8 consumers and the producer

// [bytes] one weight row of a stage: W blocks, plus 64 so that the pitch is 64 mod 128 (the 8
// rows x 64 bytes of one quarter-warp's 16-byte fragment loads hit distinct banks).
__host__ __device__ constexpr int stream_pitch(int consumer_warps) {
  return consumer_warps * kStreamStepBytes + 64;
}

// [bytes] dynamic shared memory of a stream kernel: barriers, the consumers' partials (W x MT x
// NT x 512: one m16n8 fp32 tile per lane), the ring of `stages` stages of 16 MT rows.
__host__ __device__ constexpr int stream_shared_bytes(int mt, int nt, int consumer_warps,
                                                      int stages) {
  return kStreamBarrierBytes + consumer_warps * mt * nt * 512 +
         stages * 16 * mt * stream_pitch(consumer_warps);
}

// One CTA's view of its stream: the ring, the partials, the stages and its tile range.
struct StreamCta {
  StageRing ring;
  float4 *partials;     // consumer partials, [W][MT x NT][32 lanes]
  uint8_t *stages_base; // stage s at stages_base + s x stage_bytes
  int pitch, stage_bytes;
  int tile_begin, tile_end;
  int lane, warp;
};

// Lays out `shared` (stream_shared_bytes(mt, nt, consumers, stages)), initialises the ring's
// barriers and synchronises the CTA (every thread calls it); the CTA's tiles of `tiles`.
__device__ __forceinline__ StreamCta stream_cta_begin(uint8_t *shared, int mt, int nt,
                                                      int consumers, int stages, int tiles) {
  uint64_t *barriers = reinterpret_cast<uint64_t *>(shared);
  StreamCta s{StageRing{barriers, barriers + stages, stages},
              reinterpret_cast<float4 *>(shared + kStreamBarrierBytes),
              shared + kStreamBarrierBytes + consumers * mt * nt * 512,
              stream_pitch(consumers),
              16 * mt * stream_pitch(consumers),
              0,
              0,
              static_cast<int>(threadIdx.x) & 31,
              static_cast<int>(threadIdx.x) >> 5};
  const int ctas = static_cast<int>(gridDim.x), cta = static_cast<int>(blockIdx.x);
  s.tile_begin = stream_first_tile(cta, ctas, tiles);
  s.tile_end = stream_first_tile(cta + 1, ctas, tiles);
  if (threadIdx.x == 0)
    s.ring.init(consumers);
  __syncthreads();
  return s;
}

// The producer warp: rows [t x tile_rows, (t + 1) x tile_rows) of `n` of every tile t of the
// CTA, `row_bytes` each (a multiple of 16), in `steps` steps of consumers x kStreamStepBytes
// (the last one shorter), into the ring. L2 policy evict-first: weights are read once. It reads
// weights only, so it never waits for a previous kernel (programmatic dependent launch).
__device__ __forceinline__ void stream_weights(const StreamCta &s, const uint8_t *w, int n,
                                               int row_bytes, int steps, int consumers,
                                               int tile_rows) {
  const int step_bytes = consumers * kStreamStepBytes;
  const uint64_t policy = evict_first_policy();
  StageCursor q;
  for (int tile = s.tile_begin; tile < s.tile_end; ++tile) {
    const int m0 = tile * tile_rows;
    const int valid_rows = min(tile_rows, n - m0);
    for (int j = 0; j < steps; ++j, q.advance(s.ring.stages)) {
      s.ring.acquire_empty(q);
      const int len = min(step_bytes, row_bytes - j * step_bytes); // > 0 for j < steps
      if (s.lane == 0)
        s.ring.expect(q, static_cast<uint32_t>(len * valid_rows));
      __syncwarp();
      uint8_t *dst = s.stages_base + q.stage * s.stage_bytes;
      for (int r = s.lane; r < valid_rows; r += 32)
        bulk_copy_to_shared(dst + r * s.pitch,
                            w + static_cast<size_t>(m0 + r) * row_bytes + j * step_bytes,
                            static_cast<uint32_t>(len), s.ring.full_at(q), policy);
    }
  }
}

// A consumer's activation rows: row g of each n8 tile (rows past `rows` clamped to the last,
// whose results are never stored), the lane's K offset added at use.
template <int NT>
__device__ __forceinline__ void stream_activation_rows(const uint16_t *(&xp)[NT], const uint16_t *x,
                                                       int g, int rows, int k) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    xp[nt] = x + static_cast<size_t>(min(nt * 8 + g, rows - 1)) * k;
}

// A consumer at the end of tile `m0`: its m16n8 accumulators to the partials, then (consumer
// warps only: named barrier 1, which the producer never joins) every output of the tile summed
// over the consumers in order 0..W-1 and stored as bf16 into y [rows, n].
template <int MT, int NT>
__device__ __forceinline__ void stream_store_tile(const StreamCta &s, const float (&acc)[MT][NT][4],
                                                  int consumers, int m0, int n, int rows,
                                                  uint16_t *y) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      s.partials[(s.warp * MT * NT + mt * NT + nt) * 32 + s.lane] =
          make_float4(acc[mt][nt][0], acc[mt][nt][1], acc[mt][nt][2], acc[mt][nt][3]);
  const int consumer_threads = consumers * 32;
  named_barrier(1, consumer_threads);
  const float *partials = reinterpret_cast<const float *>(s.partials);
  constexpr int TM = 16 * MT;
  for (int o = static_cast<int>(threadIdx.x); o < TM * NT * 8; o += consumer_threads) {
    const int m_local = o % TM, r = o / TM;
    if (m0 + m_local >= n || r >= rows)
      continue;
    const int offset = mma_partial_offset<NT>(m_local, r);
    float sum = 0.0f;
    for (int c = 0; c < consumers; ++c)
      sum += partials[c * MT * NT * 128 + offset];
    y[static_cast<size_t>(r) * n + m0 + m_local] = __bfloat16_as_ushort(__float2bfloat16_rn(sum));
  }
  named_barrier(1, consumer_threads);
}

} // namespace hone::cuda::kernel_detail

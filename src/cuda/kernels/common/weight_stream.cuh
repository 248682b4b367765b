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
//   consumer: ring.wait_full(q); ... read stage q.stage ...; ring.release(q, lane);
#pragma once

#include <cstdint>

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

// An L2 cache policy for data read once (createpolicy ... evict_first).
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
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
// bytes; empty[s]: one arrival per consumer warp.
struct StageRing {
  uint64_t *full;
  uint64_t *empty;
  int stages;

  __device__ __forceinline__ uint64_t *full_at(const StageCursor &q) const {
    return full + q.stage;
  }
  // REQUIRES: one thread per CTA, then a CTA barrier before the mbarriers are used.
  __device__ __forceinline__ void init(int consumer_warps) const {
    for (int s = 0; s < stages; ++s) {
      mbarrier_init(full + s, 1);
      mbarrier_init(empty + s, static_cast<uint32_t>(consumer_warps));
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
  // Consumer warp: hands step q's stage back (after __syncwarp, one lane).
  __device__ __forceinline__ void release(const StageCursor &q, int lane) const {
    __syncwarp();
    if (lane == 0)
      mbarrier_arrive(empty + q.stage);
  }
};

} // namespace hone::cuda::kernel_detail

// PTX helpers shared by the GEMV-family kernels: cache-hinted loads, cp.async, mma.sync and
// bf16 unpacking. Device code only; included by the kernels' .cuh files.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

namespace hone::cuda::kernel_detail {

// 16-byte weight load: read once, so it skips L1 and asks L2 for the whole 256-byte line
// (a warp instruction covers 64 contiguous bytes of each of 8 weight rows).
__device__ __forceinline__ uint4 load_weight(const void *p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// 8-byte weight load with load_weight's hints: a lane's words in two runs (qmv.affine's chunks of
// two quantisation groups, one run per group).
__device__ __forceinline__ uint2 load_weight_half(const void *p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];"
      : "=r"(v.x), "=r"(v.y)
      : "l"(p));
  return v;
}

// Asks L2 for the 128-byte line holding `src`: a hint, no value read. Per lane, so a warp asks
// for up to 32 lines in one instruction (CCTL.E.PF2). (The bulk form, cp.async.bulk.prefetch.L2,
// takes a warp-uniform address: per-lane addresses made nvcc loop over the lanes, one TMA
// request each.)
__device__ __forceinline__ void prefetch_line_l2(const void *src) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(src) : "memory");
}

// 16-byte asynchronous copies global -> shared, completed with cp.async.wait_group. Weights:
// L2 only, with the 256-byte L2 prefetch of load_weight; activations: through L1.
__device__ __forceinline__ void copy_weight_async(void *dst, const void *src) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
// The 8-byte form (cp.async.cg takes 16 bytes only): through L1, with the same L2 prefetch.
__device__ __forceinline__ void copy_weight_async_half(void *dst, const void *src) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], 8;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void copy_activation_async(void *dst, const void *src) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void copy_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// 16-byte activation load: X is small and re-read by every CTA, so it stays in L1.
// 16 bytes from shared memory at a 32-bit shared-window address.
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}

// 8 bytes from shared memory at a 32-bit shared-window address.
__device__ __forceinline__ uint2 lds64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}

__device__ __forceinline__ uint4 load_activation(const uint16_t *p) {
  return __ldg(reinterpret_cast<const uint4 *>(p));
}

// D += A (16x16, row) * B (16x8, col); bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }

} // namespace hone::cuda::kernel_detail

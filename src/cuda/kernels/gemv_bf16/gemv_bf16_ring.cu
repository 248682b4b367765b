// gemv.bf16 ring path: the compiled kernels, their configs, resources and launch. The chunk
// policy is in gemv_bf16_ring.cuh, the kernel in ../common/weight_ring.cuh.
#include "cuda/kernels/gemv_bf16/gemv_bf16_ring.h"

#include <cstdint>
#include <vector>

#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_ring.cuh"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"

namespace hone::cuda {

namespace {

using gemv_bf16_detail::RingExtra;
using kernel_detail::RingArgs;
using RingFn = void (*)(RingArgs<RingExtra>);

struct RingEntry {
  int rows_per_cta;     // NT * 8
  int outputs_per_warp; // MT * 16
  int max_consumers;    // MAX_THREADS / 32 - 1
  int pair_consumers;   // at two CTAs per SM (ring_pair_consumers)
  RingFn fn;
};

// REGISTERS: the kernel's count (ptxas, sm_90a), for the pairs offered;
// GemvBf16KernelTest.RingPairsFitTheRegisterFile holds it to the compiled kernel.
template <int NT, int MT, int MAX_THREADS, int REGISTERS> constexpr RingEntry ring_entry() {
  return {
      NT * 8, MT * 16, MAX_THREADS / 32 - 1, ring_pair_consumers(REGISTERS),
      &kernel_detail::weight_ring_kernel<gemv_bf16_detail::RingChunk<NT, MT>, NT, MT, MAX_THREADS>};
}

// NOTE: MAX_THREADS caps the registers (ptxas budgets for a multiple of 128 threads: 544 leaves
// 96, 288 leaves 168); every kernel at 0 spill bytes (-Xptxas -v).
// <NT, MT, MAX_THREADS, REGISTERS>
const RingEntry kRingKernels[] = {
    ring_entry<1, 1, 544, 54>(), ring_entry<1, 2, 544, 58>(), ring_entry<2, 1, 544, 56>(),
    ring_entry<2, 2, 288, 72>(), ring_entry<4, 1, 288, 73>(), ring_entry<4, 2, 288, 95>(),
};

const RingEntry *find_ring_kernel(const GemvBf16Config &c) {
  if (c.path != KernelPath::ring)
    return nullptr;
  for (const RingEntry &e : kRingKernels)
    if (e.rows_per_cta == c.rows_per_cta && e.outputs_per_warp == c.outputs_per_warp)
      return &e;
  return nullptr;
}

} // namespace

void append_gemv_bf16_ring_configs(std::vector<GemvBf16Config> &out) {
  for (const RingEntry &e : kRingKernels) {
    GemvBf16Config base;
    base.rows_per_cta = e.rows_per_cta;
    base.outputs_per_warp = e.outputs_per_warp;
    base.vec = 16;
    append_ring_configs(base, e.max_consumers, e.pair_consumers, kGemvBf16RingChunkK, out);
  }
}

KernelResources gemv_bf16_ring_resources(const GemvBf16Config &config) {
  const RingEntry *e = find_ring_kernel(config);
  if (!e)
    return {};
  const void *fns[] = {reinterpret_cast<const void *>(e->fn)};
  return split_k_resources(
      fns, static_cast<size_t>(ring_shared_bytes(config, config, kGemvBf16RingChunkK)));
}

LaunchStatus gemv_bf16_ring_launch(const GemvBf16Config &config, const GemvBf16Args &args,
                                   void *stream) {
  const RingEntry *e = find_ring_kernel(config);
  if (!e || config.vec != 16)
    return LaunchStatus::invalid_value();
  RingArgs<RingExtra> a{};
  a.p.y = static_cast<uint16_t *>(args.y);
  a.p.rows = args.rows;
  a.p.n = args.n;
  a.p.k = args.k;
  // The mma path's slice: gemv_bf16_slice_granules / 4 chunks of 32.
  return kernel_detail::launch_weight_ring(
      reinterpret_cast<const void *>(e->fn), config, config, args.w, args.x, a, kGemvBf16RingChunkK,
      gemv_bf16_slice_granules(config, args.k) / 4, e->max_consumers, stream, args.chain.dependent);
}

} // namespace hone::cuda

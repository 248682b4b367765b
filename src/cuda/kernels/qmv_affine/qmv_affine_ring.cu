// qmv.affine ring path: the compiled kernels, their configs, resources and launch. The chunk
// policy is in qmv_affine_ring.cuh, the kernel in ../common/weight_ring.cuh, the tactic fields in
// qmv_affine_ring.h.
#include "cuda/kernels/qmv_affine/qmv_affine_ring.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/qmv_affine/qmv_affine_ring.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"

namespace hone::cuda {

namespace {

using kernel_detail::RingArgs;
using qmv_affine_detail::RingExtra;
using RingFn = void (*)(RingArgs<RingExtra>);

// One compiled kernel: <BITS, NT, MT> with the mma path's dequantisations
// (qmv_affine_chunk_groups: per weight, one group per chunk, two at 4 bits; null at 8 bits).
struct RingEntry {
  int bits;
  int rows_per_cta;     // NT * 8
  int outputs_per_warp; // MT * 16
  int max_consumers;    // MAX_THREADS / 32 - 1
  int pair_consumers;   // at two CTAs per SM (ring_pair_consumers)
  RingFn fn[3];         // [chunk groups]
};

// REGISTERS: the more of the per-weight and one-group kernels' counts (ptxas, sm_90a, as CMake
// builds them), for the pairs offered; TWO_GROUP_REGISTERS: the two-group kernel's, which counts
// only where the two-group chunks are the default (kQmvAffineTwoGroupChunks: they take up to 40
// more, which would cost pairs the other forms keep, e.g. <4, 4, 2>'s of four consumers).
// QmvAffineKernel.RingPairsFitTheRegisterFile holds them to the compiled kernels.
template <int BITS, int NT, int MT, int MAX_THREADS, int REGISTERS, int TWO_GROUP_REGISTERS = 0>
constexpr RingEntry ring_entry() {
  using kernel_detail::weight_ring_kernel;
  using qmv_affine_detail::RingChunk;
  constexpr int registers =
      kQmvAffineTwoGroupChunks ? std::max(REGISTERS, TWO_GROUP_REGISTERS) : REGISTERS;
  RingFn two_group = nullptr; // 4 bits only
  if constexpr (BITS == 4)
    two_group = &weight_ring_kernel<RingChunk<BITS, NT, MT, 2>, NT, MT, MAX_THREADS>;
  return {BITS,
          NT * 8,
          MT * 16,
          MAX_THREADS / 32 - 1,
          ring_pair_consumers(registers),
          {&weight_ring_kernel<RingChunk<BITS, NT, MT, 0>, NT, MT, MAX_THREADS>,
           &weight_ring_kernel<RingChunk<BITS, NT, MT, 1>, NT, MT, MAX_THREADS>, two_group}};
}

// NOTE: MAX_THREADS caps the registers, and ptxas budgets for a multiple of 128 threads: 544
// (16 consumers and the producer) leaves 96 registers, 288 (8 and the producer) 168. Up to 16
// consumers where a warp holds one m16n8 tile, up to 8 where it holds two or four: every kernel
// at 0 spill bytes (-Xptxas -v), which needed the 32-bit activation and group-parameter offsets
// of the kernel (64-bit pointers spilled the 4-bit factored kernel of four n8 tiles at 168).
// Four n8 tiles by two m16 tiles (17-32 rows: a warp's activation fragments serve twice the
// weights, halving the activations' shared-memory reads per weight, which at one m16 tile are
// 8 x the weights') take 4 consumers and 186 / 178 registers (factored, 4 / 8 bits): at 288
// threads (168) the factored kernels spilled 32 and 8 bytes. Four m16 tiles spilled at 255.
// <BITS, NT, MT, MAX_THREADS, REGISTERS>
const RingEntry kRingKernels[] = {
    ring_entry<4, 1, 1, 544, 74, 86>(),   ring_entry<4, 1, 2, 288, 103, 118>(),
    ring_entry<4, 2, 1, 288, 100, 107>(), ring_entry<4, 2, 2, 288, 132, 146>(),
    ring_entry<4, 4, 1, 288, 130, 149>(), ring_entry<4, 4, 2, 160, 187, 227>(),
    ring_entry<8, 1, 1, 544, 72>(),       ring_entry<8, 1, 2, 288, 96>(),
    ring_entry<8, 2, 1, 288, 90>(),       ring_entry<8, 2, 2, 288, 125>(),
    ring_entry<8, 4, 1, 288, 124>(),      ring_entry<8, 4, 2, 160, 180>(),
};

const RingEntry *find_ring_kernel(const QmvAffineConfig &c, int bits) {
  if (c.path != KernelPath::ring)
    return nullptr;
  for (const RingEntry &e : kRingKernels)
    if (e.bits == bits && e.rows_per_cta == c.rows_per_cta &&
        e.outputs_per_warp == c.outputs_per_warp)
      return &e;
  return nullptr;
}

} // namespace

void append_qmv_affine_ring_configs(int bits, std::vector<QmvAffineConfig> &out) {
  for (const RingEntry &e : kRingKernels)
    if (e.bits == bits) {
      QmvAffineConfig base;
      base.rows_per_cta = e.rows_per_cta;
      base.outputs_per_warp = e.outputs_per_warp;
      append_ring_configs(base, e.max_consumers, e.pair_consumers, qmv_affine_chunk_k(bits), out);
    }
}

KernelResources qmv_affine_ring_resources(const QmvAffineConfig &config, int bits) {
  const RingEntry *e = find_ring_kernel(config, bits);
  if (!e)
    return {};
  // The worst of the config's kernels of the forms in use (the two-group one only where it is
  // the default; forced by QmvAffineArgs::chunk_groups, a pair its registers do not fit runs
  // one CTA per SM: persistent_ctas asks the occupancy).
  const void *in_use[] = {
      reinterpret_cast<const void *>(e->fn[0]), reinterpret_cast<const void *>(e->fn[1]),
      kQmvAffineTwoGroupChunks ? reinterpret_cast<const void *>(e->fn[2]) : nullptr};
  return split_k_resources(
      in_use, static_cast<size_t>(ring_shared_bytes(config, config, qmv_affine_chunk_k(bits))));
}

LaunchStatus qmv_affine_ring_launch(const QmvAffineConfig &config, const QmvAffineArgs &args,
                                    void *stream) {
  const RingEntry *e = find_ring_kernel(config, args.bits);
  // The kernel's 32-bit group-parameter offsets need n x k / group < 2^31.
  if (!e || (args.group != 32 && args.group != 64 && args.group != 128) ||
      args.k % args.group != 0 ||
      static_cast<long long>(args.n) * (args.k / args.group) >= (1ll << 31))
    return LaunchStatus::invalid_value();
  RingArgs<RingExtra> a{};
  a.p.y = static_cast<uint16_t *>(args.y);
  a.p.rows = args.rows;
  a.p.n = args.n;
  a.p.k = args.k;
  a.extra.scales = static_cast<const uint16_t *>(args.scales);
  a.extra.biases = static_cast<const uint16_t *>(args.biases);
  a.extra.groups_per_row = args.k / args.group;
  a.extra.group_shift = std::countr_zero(static_cast<unsigned>(args.group));
  const int chunk_k = qmv_affine_chunk_k(args.bits);
  const int groups =
      qmv_affine_launch_chunk_groups(args.chunk_groups, args.bits, args.group, args.k);
  const RingFn ring_fn = groups < 0 ? nullptr : e->fn[groups];
  if (!ring_fn || (groups == 2 && !qmv_affine_parameter_pairs_aligned(args.scales, args.biases)))
    return LaunchStatus::invalid_value();
  const void *fn = reinterpret_cast<const void *>(ring_fn);
  return kernel_detail::launch_weight_ring(fn, config, config, args.q, args.x, a, chunk_k,
                                           qmv_affine_slice_chunks(config, args.k, args.bits),
                                           e->max_consumers, stream, args.chain.dependent);
}

} // namespace hone::cuda

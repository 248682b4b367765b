// qmv.affine ring path: the compiled kernels, their configs, resources and launch. The kernel is
// in qmv_affine_ring.cuh, the tactic fields in qmv_affine_ring.h.
#include "cuda/kernels/qmv_affine/qmv_affine_ring.h"

#include <bit>
#include <cstdint>
#include <vector>

#include "cuda/kernels/common/weight_stream.h"
#include "cuda/kernels/qmv_affine/qmv_affine_ring.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"

namespace hone::cuda {

namespace {

using qmv_affine_detail::RingParams;
using RingFn = void (*)(RingParams);

// One compiled kernel: <BITS, NT, MT> with its two dequantisations, per weight and factored
// (one group per chunk), as the mma path.
struct RingEntry {
  int bits;
  int rows_per_cta;     // NT * 8
  int outputs_per_warp; // MT * 16
  int max_consumers;    // MAX_THREADS / 32 - 1
  RingFn fn[2];         // [factored]
};

template <int BITS, int NT, int MT, int MAX_THREADS> constexpr RingEntry ring_entry() {
  using qmv_affine_detail::qmv_affine_ring_kernel;
  return {BITS,
          NT * 8,
          MT * 16,
          MAX_THREADS / 32 - 1,
          {&qmv_affine_ring_kernel<BITS, NT, MT, false, MAX_THREADS>,
           &qmv_affine_ring_kernel<BITS, NT, MT, true, MAX_THREADS>}};
}

// NOTE: MAX_THREADS caps the registers, and ptxas budgets for a multiple of 128 threads: 544
// (16 consumers and the producer) leaves 96 registers, 288 (8 and the producer) 168. Up to 16
// consumers where a warp holds one m16n8 tile, up to 8 where it holds two or four: every kernel
// at 0 spill bytes (-Xptxas -v), which needed the 32-bit activation and group-parameter offsets
// of the kernel (64-bit pointers spilled the 4-bit factored kernel of four n8 tiles at 168).
// <BITS, NT, MT, MAX_THREADS>
const RingEntry kRingKernels[] = {
    ring_entry<4, 1, 1, 544>(), ring_entry<4, 1, 2, 288>(), ring_entry<4, 2, 1, 288>(),
    ring_entry<4, 2, 2, 288>(), ring_entry<4, 4, 1, 288>(), ring_entry<8, 1, 1, 544>(),
    ring_entry<8, 1, 2, 288>(), ring_entry<8, 2, 1, 288>(), ring_entry<8, 2, 2, 288>(),
    ring_entry<8, 4, 1, 288>(),
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

// The ring's tactic axes. Consumer warps per CTA 4 to 16, as many as the kernel takes, split as
// warps_k K slices (a power of two: the mma path's k_slices) x warps_n row groups (any count);
// two CTAs per SM only for CTAs of at most 8 warps (two larger ones do not fit the register file
// at these kernels' counts).
constexpr int kRingSlices[] = {1, 2, 4, 8, 16};
constexpr int kRingConsumers[] = {4, 6, 8, 12, 16};
constexpr int kRingStages[] = {4, 8};
constexpr int kRingMaxThreadsAtTwoPerSm = 256;

} // namespace

void append_qmv_affine_ring_configs(int bits, std::vector<QmvAffineConfig> &out) {
  for (const RingEntry &e : kRingKernels) {
    if (e.bits != bits)
      continue;
    for (int consumers : kRingConsumers) {
      if (consumers > e.max_consumers)
        continue;
      for (int slices : kRingSlices) {
        if (consumers % slices != 0)
          continue;
        for (int stages : kRingStages)
          for (int per_sm : {1, 2}) {
            if (per_sm == 2 && (consumers + 1) * 32 > kRingMaxThreadsAtTwoPerSm)
              continue;
            QmvAffineConfig c;
            c.path = KernelPath::ring;
            c.rows_per_cta = e.rows_per_cta;
            c.outputs_per_warp = e.outputs_per_warp;
            c.warps = consumers;
            c.warps_k = slices;
            c.split_k = 1;
            c.async = 0;
            c.stages = stages;
            c.ctas_per_sm = per_sm;
            if (static_cast<size_t>(qmv_affine_ring_shared_bytes(c)) * per_sm <=
                kStreamMaxSharedBytes)
              out.push_back(c);
          }
      }
    }
  }
}

KernelResources qmv_affine_ring_resources(const QmvAffineConfig &config, int bits) {
  const RingEntry *e = find_ring_kernel(config, bits);
  if (!e)
    return {};
  // The worst of the config's two kernels (per-weight and factored dequantisation).
  const void *both[] = {reinterpret_cast<const void *>(e->fn[0]),
                        reinterpret_cast<const void *>(e->fn[1])};
  return split_k_resources(both, static_cast<size_t>(qmv_affine_ring_shared_bytes(config)));
}

LaunchStatus qmv_affine_ring_launch(const QmvAffineConfig &config, const QmvAffineArgs &args,
                                    void *stream) {
  const RingEntry *e = find_ring_kernel(config, args.bits);
  if (!e || args.k < 32 || args.k % 32 != 0 ||
      (args.group != 32 && args.group != 64 && args.group != 128) || args.k % args.group != 0 ||
      args.n < 1 || args.rows < 1 || args.rows > config.rows_per_cta || config.warps_k < 1 ||
      config.warps % config.warps_k != 0 || config.warps > e->max_consumers ||
      config.split_k != 1 || config.stages < 2 || config.stages > 16 || config.ctas_per_sm < 1 ||
      reinterpret_cast<uintptr_t>(args.q) % 16 != 0)
    return LaunchStatus::invalid_value();
  const int chunk_k = qmv_affine_chunk_k(args.bits);
  if (args.k % chunk_k != 0)
    return LaunchStatus::invalid_value();
  RingParams p{};
  p.x = static_cast<const uint16_t *>(args.x);
  p.q = reinterpret_cast<const uint8_t *>(args.q);
  p.scales = static_cast<const uint16_t *>(args.scales);
  p.biases = static_cast<const uint16_t *>(args.biases);
  p.y = static_cast<uint16_t *>(args.y);
  p.rows = args.rows;
  p.n = args.n;
  p.k = args.k;
  p.row_bytes = args.k / 8 * args.bits;
  p.groups_per_row = args.k / args.group;
  p.group_shift = std::countr_zero(static_cast<unsigned>(args.group));
  p.warps_k = config.warps_k;
  p.warps_n = config.warps / config.warps_k;
  p.total_chunks = args.k / chunk_k;
  p.slice_chunks = qmv_affine_slice_chunks(config, args.k, args.bits);
  if (config.warps_k > p.total_chunks)
    return LaunchStatus::invalid_value();
  p.step_chunks = qmv_affine_ring_step_chunks(config);
  p.steps = (p.slice_chunks + p.step_chunks - 1) / p.step_chunks;
  p.stages = config.stages;
  const int tile_rows = qmv_affine_ring_tile_rows(config);
  p.tiles = (args.n + tile_rows - 1) / tile_rows;
  p.pitch = qmv_affine_ring_pitch(p.step_chunks);
  const void *fn = reinterpret_cast<const void *>(e->fn[args.group >= chunk_k ? 1 : 0]);
  return launch_stream_kernel(fn, config.warps,
                              static_cast<size_t>(qmv_affine_ring_shared_bytes(config)), p.tiles,
                              config.ctas_per_sm, &p, stream, args.chain.dependent);
}

} // namespace hone::cuda

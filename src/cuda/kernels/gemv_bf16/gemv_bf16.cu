// gemv.bf16 kernels: the compiled kernel table, the config list built on it, resources and
// launch. Shape logic (tactics, defaults, can_implement) lives in gemv_bf16_config.cpp.
//
// Tactic fields (`gemv.bf16.mma:...` or `gemv.bf16.fma:...`):
//   rows_per_cta      activation rows per CTA; more rows run as more CTAs along grid.z, which
//                     re-read the same weights (mostly from L2). mma: 8, 16, 32; fma: 1..8
//   warps             warps per CTA = warps_n x warps_k
//   warps_k           warps of one CTA that take adjacent K slices
//   outputs_per_warp  weight rows per warp: mma 16 or 32 (one or two m16 tiles), fma 1..4
//   split_k           CTAs of one thread-block cluster that take further K slices (sm_90)
//   vec               bytes per load; 16 for every compiled kernel
//   async             (mma, optional, default 0) 1: fragments of the next S chunks stream
//                     through a lane-private cp.async ring in shared memory instead of a
//                     register double buffer; bit-identical to async=0
// `gemv.bf16.stream:...` (weights once, persistent grid; gemv_bf16.cuh) reads the same fields
// as: rows_per_cta 8, 16 or 32 (all rows in one CTA: rows <= rows_per_cta), warps = warps_k =
// consumer warps = K slices (plus one producer warp), outputs_per_warp = weight rows per tile
// (16 or 32), split_k 1, vec 16, and adds
//   stages            ring depth: shared-memory stages of outputs_per_warp rows x warps x 128 K
//   ctas_per_sm       resident CTAs per SM of the persistent grid (1 or 2)
// `gemv.bf16.ring:...` (gemv_bf16_ring.h) has the stream path's fields and the mma path's K
// order.
// k_slices = warps_k x split_k fixes the K summation order (see gemv_bf16.cuh): configs of
// one path with equal k_slices give bit-identical rows for every row count.
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"

#include <span>
#include <vector>

#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/common/weight_stream.h"

#include "cuda/kernels/gemv_bf16/gemv_bf16.cuh"
#include "cuda/kernels/gemv_bf16/gemv_bf16_ring.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"

namespace hone::cuda {

namespace {

using gemv_bf16_detail::Params;

// One compiled kernel: the template parameters it fixes, then its slot in the family table.
struct KernelEntry {
  KernelPath path;
  int rows_per_cta;     // NT * 8 (mma) or R (fma)
  int outputs_per_warp; // MT * 16 (mma) or O (fma)
  SplitKKernel kernel;  // async_fn, if any: the cp.async pipeline (S > 0), ring S x (2 MT + NT)
                        // x 512 bytes per warp
  SplitKKernel silu;    // the same kernels with the SiLU epilogue (mma path; fn null elsewhere)
};

template <int NT, int MT, int J, int MAX_THREADS, int S = 0> constexpr KernelEntry mma_entry() {
  KernelEntry e{KernelPath::mma,
                NT * 8,
                MT * 16,
                {reinterpret_cast<const void *>(
                     &gemv_bf16_detail::gemv_bf16_mma_kernel<NT, MT, J, MAX_THREADS>),
                 nullptr, MAX_THREADS, MT * NT * 128, 0},
                {}};
  e.silu = e.kernel;
  e.silu.fn = reinterpret_cast<const void *>(
      &gemv_bf16_detail::gemv_bf16_mma_kernel<NT, MT, J, MAX_THREADS, 0, true>);
  if constexpr (S > 0) {
    e.kernel.async_fn = reinterpret_cast<const void *>(
        &gemv_bf16_detail::gemv_bf16_mma_kernel<NT, MT, J, MAX_THREADS, S>);
    e.kernel.async_bytes_per_warp = S * (2 * MT + NT) * 512;
    e.silu.async_fn = reinterpret_cast<const void *>(
        &gemv_bf16_detail::gemv_bf16_mma_kernel<NT, MT, J, MAX_THREADS, S, true>);
    e.silu.async_bytes_per_warp = e.kernel.async_bytes_per_warp;
  }
  return e;
}
template <int R, int O, int U, int MAX_THREADS> constexpr KernelEntry fma_entry() {
  return {KernelPath::fma,
          R,
          O,
          {reinterpret_cast<const void *>(
               &gemv_bf16_detail::gemv_bf16_fma_kernel<R, O, U, MAX_THREADS>),
           nullptr, MAX_THREADS, O * R, 0},
          {}};
}

// NOTE: J (chunks in flight) and U (granules in flight) are sized so that the weight
// fragments, their prefetch, the activation fragments and the accumulators fit the register
// cap of MAX_THREADS without spilling (checked with -Xptxas -v).
const KernelEntry kKernels[] = {
    mma_entry<1, 1, 4, 512>(),    mma_entry<2, 1, 4, 256, 6>(), mma_entry<4, 1, 2, 256>(),
    mma_entry<2, 2, 2, 256, 4>(), mma_entry<4, 2, 2, 256, 3>(), mma_entry<4, 4, 1, 256>(),
    fma_entry<1, 2, 4, 256>(),    fma_entry<1, 4, 2, 256>(),    fma_entry<2, 2, 4, 256>(),
    fma_entry<2, 4, 2, 256>(),    fma_entry<4, 2, 2, 256>(),    fma_entry<4, 4, 2, 256>(),
    fma_entry<8, 1, 2, 256>(),    fma_entry<8, 2, 1, 256>(),
};

const KernelEntry *find_kernel(const GemvBf16Config &c) {
  for (const KernelEntry &e : kKernels)
    if (e.path == c.path && e.rows_per_cta == c.rows_per_cta &&
        e.outputs_per_warp == c.outputs_per_warp)
      return &e;
  return nullptr;
}

// The CUDA-core path's shapes (the tensor-core path takes kMmaCtaShapes).
constexpr CtaShape kFmaShapes[] = {{1, 1, 4}, {4, 1, 2}, {8, 1, 1}, {4, 2, 1}};

// The stream kernels: <NT, MT> = activation-row tiles of 8, weight-row tiles of 16 per tile.
struct StreamEntry {
  int rows_per_cta;     // NT * 8
  int outputs_per_warp; // MT * 16: weight rows per tile
  const void *fn;
};
template <int NT, int MT> constexpr StreamEntry stream_entry() {
  return {NT * 8, MT * 16,
          reinterpret_cast<const void *>(&gemv_bf16_detail::gemv_bf16_stream_kernel<NT, MT>)};
}
const StreamEntry kStreamKernels[] = {
    stream_entry<1, 1>(), stream_entry<1, 2>(), stream_entry<2, 1>(),
    stream_entry<2, 2>(), stream_entry<4, 1>(), stream_entry<4, 2>(),
};

const StreamEntry *find_stream_kernel(const GemvBf16Config &c) {
  for (const StreamEntry &e : kStreamKernels)
    if (e.rows_per_cta == c.rows_per_cta && e.outputs_per_warp == c.outputs_per_warp)
      return &e;
  return nullptr;
}

size_t stream_shared_bytes(const GemvBf16Config &c) {
  return static_cast<size_t>(gemv_bf16_detail::stream_shared_bytes(
      c.outputs_per_warp / 16, c.rows_per_cta / 8, c.warps_k, c.stages));
}

void add_stream_configs(std::vector<GemvBf16Config> &out) {
  for (const StreamEntry &e : kStreamKernels) {
    GemvBf16Config base;
    base.rows_per_cta = e.rows_per_cta;
    base.outputs_per_warp = e.outputs_per_warp;
    base.vec = 16;
    append_stream_configs(base, stream_shared_bytes, out);
  }
}

std::vector<GemvBf16Config> build_configs() {
  std::vector<GemvBf16Config> out;
  for (const KernelEntry &e : kKernels) {
    GemvBf16Config base;
    base.path = e.path;
    base.rows_per_cta = e.rows_per_cta;
    base.outputs_per_warp = e.outputs_per_warp;
    base.vec = 16;
    add_split_k_configs(e.kernel, base,
                        e.path == KernelPath::mma ? std::span<const CtaShape>(kMmaCtaShapes)
                                                  : std::span<const CtaShape>(kFmaShapes),
                        out);
  }
  add_stream_configs(out);
  append_gemv_bf16_ring_configs(out);
  return out;
}

} // namespace

const std::vector<GemvBf16Config> &gemv_bf16_configs() {
  static const std::vector<GemvBf16Config> configs = build_configs();
  return configs;
}

KernelResources gemv_bf16_resources(const GemvBf16Config &config) {
  if (config.path == KernelPath::ring)
    return gemv_bf16_ring_resources(config);
  if (config.path == KernelPath::stream) {
    const StreamEntry *s = find_stream_kernel(config);
    if (!s)
      return {};
    const void *fns[] = {s->fn};
    return split_k_resources(fns, stream_shared_bytes(config));
  }
  const KernelEntry *e = find_kernel(config);
  if (!e)
    return {};
  // The kernel the config launches: the ring kernel of an async config.
  const void *fns[] = {config.async ? e->kernel.async_fn : e->kernel.fn};
  return split_k_resources(fns, split_k_shared_bytes(e->kernel, config.warps, config.async != 0));
}

bool gemv_bf16_silu_epilogue_fits(const GemvBf16Config &config, int inter) {
  if (config.path != KernelPath::mma || inter <= 0 || inter % 8 != 0)
    return false;
  const KernelEntry *e = find_kernel(config);
  const void *fn = !e ? nullptr : config.async ? e->silu.async_fn : e->silu.fn;
  // The spill rule holds for the epilogue's kernels too: one that spills is never launched.
  return fn && kernel_spill_free(fn);
}

LaunchStatus gemv_bf16_launch(const GemvBf16Config &config, const GemvBf16Args &args,
                              void *stream) {
  if (args.silu_inter != 0 &&
      (!gemv_bf16_silu_epilogue_fits(config, args.silu_inter) || args.n != 2 * args.silu_inter))
    return LaunchStatus::invalid_value();
  if (config.path == KernelPath::ring)
    return gemv_bf16_ring_launch(config, args, stream);
  if (config.path == KernelPath::stream) {
    const StreamEntry *s = find_stream_kernel(config);
    const int chunks = (args.k + 31) / 32;
    if (!s || config.vec != 16 || args.k < 8 || args.k % 8 != 0 || args.n < 1 ||
        !stream_launch_fits(config, config, args.rows, chunks))
      return LaunchStatus::invalid_value();
    gemv_bf16_detail::StreamParams p;
    static_cast<StreamShape &>(p) =
        stream_shape(args.x, args.y, args.rows, args.n, args.k, args.k * 2, config.outputs_per_warp,
                     config, config);
    p.w = static_cast<const uint16_t *>(args.w);
    return launch_stream_kernel(s->fn, config.warps_k, stream_shared_bytes(config), p.tiles,
                                config.ctas_per_sm, &p, stream, args.chain.dependent);
  }
  const KernelEntry *e = find_kernel(config);
  if (!e || config.vec != 16 || args.k < 8 || args.k % 8 != 0 || config.warps_k < 1 ||
      config.split_k < 1 || !gemv_bf16_offsets_fit(args.n, args.k))
    return LaunchStatus::invalid_value();
  Params p;
  p.x = static_cast<const uint16_t *>(args.x);
  p.w = static_cast<const uint16_t *>(args.w);
  p.y = static_cast<uint16_t *>(args.y);
  set_split_k_params(p, config, args.rows, args.n, args.k);
  p.slice_granules = gemv_bf16_slice_granules(config, args.k);
  p.silu_inter = args.silu_inter;
  return launch_split_k_kernel(args.silu_inter > 0 ? e->silu : e->kernel, config, args.n, args.rows,
                               &p, stream, nullptr, args.chain.dependent);
}

} // namespace hone::cuda

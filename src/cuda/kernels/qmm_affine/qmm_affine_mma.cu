// qmm.affine's mma path: the compiled kernel table and the launch (cluster of split_k CTAs
// along grid.y when K is split).
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"

#include <cuda_runtime.h>

#include "cuda/kernels/common/split_k_launch.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.cuh"

namespace hone::cuda {

namespace {

using qmm_mma_detail::Params;
using KernelFn = void (*)(Params);

struct Entry {
  QmmMmaKernel kernel;
  KernelFn fn;
  int threads;
  int shared_bytes;
};

template <int NT, int MT, int WARPS, int STAGES> constexpr Entry entry() {
  using L = qmm_mma_detail::Layout<NT, MT, WARPS, STAGES>;
  return {{L::kTm, L::kBn, WARPS, STAGES},
          &qmm_mma_detail::qmm_affine_mma_kernel<NT, MT, WARPS, STAGES>,
          L::kThreads,
          L::kShared};
}

// <NT (activation rows / 8), MT (m16 tiles per warp), WARPS, STAGES>: activation tiles 16, 32
// and 64; 64 or 128 weight rows per CTA at 4 warps, 128 or 256 at 8; a 3- or 5-deep ring.
// NOTE: none spills (-Xptxas -v, sm_90a): 72-138 registers. Two m16 tiles per warp at 64
// activation rows (64 fp32 accumulators) spilled 40-160 bytes and are left out.
const Entry kEntries[] = {
    entry<2, 1, 4, 3>(), entry<2, 1, 4, 5>(), entry<2, 2, 4, 3>(), entry<2, 2, 4, 5>(),
    entry<2, 1, 8, 3>(), entry<2, 1, 8, 5>(), entry<2, 2, 8, 3>(), entry<2, 2, 8, 5>(),
    entry<4, 1, 4, 3>(), entry<4, 1, 4, 5>(), entry<4, 2, 4, 3>(), entry<4, 2, 4, 5>(),
    entry<4, 1, 8, 3>(), entry<4, 1, 8, 5>(), entry<4, 2, 8, 3>(), entry<4, 2, 8, 5>(),
    entry<8, 1, 4, 3>(), entry<8, 1, 4, 5>(), entry<8, 1, 8, 3>(), entry<8, 1, 8, 5>(),
};

const Entry *find(const QmmMmaKernel &k) {
  for (const Entry &e : kEntries)
    if (e.kernel.tile_m == k.tile_m && e.kernel.tile_n == k.tile_n && e.kernel.warps == k.warps &&
        e.kernel.stages == k.stages)
      return &e;
  return nullptr;
}

} // namespace

const std::vector<QmmMmaKernel> &qmm_mma_kernels() {
  static const std::vector<QmmMmaKernel> all = [] {
    std::vector<QmmMmaKernel> out;
    for (const Entry &e : kEntries)
      out.push_back(e.kernel);
    return out;
  }();
  return all;
}

KernelResources qmm_mma_resources(const QmmMmaKernel &kernel) {
  const Entry *e = find(kernel);
  if (!e)
    return {};
  KernelResources r = kernel_detail::resources_of(e->fn);
  r.shared_bytes += static_cast<size_t>(e->shared_bytes);
  return r;
}

LaunchStatus qmm_mma_launch(const QmmMmaKernel &kernel, const QmmMmaArgs &a, void *stream) {
  const Entry *e = find(kernel);
  if (!e || a.m < 1 || a.n < 8 || a.n % 8 != 0 || a.k < kQmmMmaBlockK || a.k % kQmmMmaBlockK != 0 ||
      (a.group != 32 && a.group != 64 && a.group != 128) || a.k % a.group != 0 ||
      (a.k / a.group) % 2 != 0 || a.split_k < 1 || a.split_k > kQmmMmaMaxSplit ||
      a.split_k > a.k / kQmmMmaBlockK || !a.x || !a.q || !a.scales || !a.biases || !a.y)
    return LaunchStatus::invalid_value();
  const auto fn = reinterpret_cast<const void *>(e->fn);
  if (static_cast<size_t>(e->shared_bytes) > shared_memory_opt_in(fn))
    return LaunchStatus::invalid_configuration();
  Params p;
  p.x = static_cast<const uint16_t *>(a.x);
  p.q = a.q;
  p.scales = static_cast<const uint16_t *>(a.scales);
  p.biases = static_cast<const uint16_t *>(a.biases);
  p.y = static_cast<uint16_t *>(a.y);
  p.m = a.m;
  p.n = a.n;
  p.k = a.k;
  p.group = a.group;
  p.group_shift = a.group == 32 ? 5 : a.group == 64 ? 6 : 7;
  p.split_k = a.split_k;

  // The grid of the split-K GEMV family: weight tiles along x, the split_k CTAs of a tile (one
  // cluster) along y, activation tiles along z.
  const SplitKGrid grid{a.n, a.m, kernel.tile_n, kernel.tile_m, a.split_k, e->threads};
  return LaunchStatus::from_cuda(
      launch_split_k(grid, static_cast<size_t>(e->shared_bytes), fn, &p, stream, a.dependent));
}

} // namespace hone::cuda

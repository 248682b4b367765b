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

template <int NT, int MT, int WN, int WK, int STAGES, int MIN_BLOCKS> constexpr Entry entry() {
  using L = qmm_mma_detail::Layout<NT, MT, WN, WK, STAGES>;
  return {{L::kTm, L::kBn, L::kBk, L::kWarps, STAGES},
          &qmm_mma_detail::qmm_affine_mma_kernel<NT, MT, WN, WK, STAGES, MIN_BLOCKS>,
          L::kThreads,
          L::kShared};
}

// <NT (activation rows / 8), MT (m16 tiles per warp), WN (warps along the weight rows), WK
// (warps along K: 64 WK deep blocks), STAGES, MIN_BLOCKS (CTAs per SM the registers are
// budgeted for)>, by activation tile:
//   WK 1: 64 or 128 weight rows per CTA at 4 warps, 128 or 256 at 8; a 3- or 5-deep ring.
//   WK 2 and 4: 128- and 256-deep blocks, 32-128 weight rows, 8 or 16 warps.
// The activation tile is re-read from L2 by every CTA along the weight rows: (n / tile_n) x
// 2 m k bytes, 4 m / tile_n times the int4 weights, hence 128 weight rows at 64 activation rows.
// MIN_BLOCKS is the largest that compiles without spills (-Xptxas -v, sm_90a): 64 registers
// for the 16-row tiles of one m16 tile per warp (2 or 4 CTAs of 16 or 8 warps per SM), 80-96
// at 32 rows. Two m16 tiles per warp at 64 activation rows (64 fp32 accumulators) spilled
// 40-160 bytes and are left out.
const Entry kEntries[] = {
    // 16 activation rows
    entry<2, 1, 4, 1, 3, 6>(),
    entry<2, 1, 4, 1, 5, 6>(),
    entry<2, 2, 4, 1, 3, 6>(),
    entry<2, 2, 4, 1, 5, 3>(),
    entry<2, 1, 8, 1, 3, 4>(),
    entry<2, 1, 8, 1, 5, 2>(),
    entry<2, 2, 8, 1, 3, 2>(),
    entry<2, 2, 8, 1, 5, 2>(),
    entry<2, 1, 4, 2, 4, 2>(),
    entry<2, 2, 4, 2, 4, 2>(),
    entry<2, 1, 4, 4, 3, 2>(),
    entry<2, 2, 2, 4, 3, 2>(),
    entry<2, 1, 2, 4, 4, 4>(),
    // 32
    entry<4, 1, 4, 1, 3, 5>(),
    entry<4, 1, 4, 1, 5, 5>(),
    entry<4, 2, 4, 1, 3, 3>(),
    entry<4, 2, 4, 1, 5, 3>(),
    entry<4, 1, 8, 1, 3, 2>(),
    entry<4, 1, 8, 1, 5, 2>(),
    entry<4, 2, 8, 1, 3, 2>(),
    entry<4, 2, 8, 1, 5, 2>(),
    entry<4, 1, 4, 2, 4, 3>(),
    entry<4, 2, 4, 2, 3, 2>(),
    entry<4, 1, 4, 4, 3, 1>(),
    entry<4, 2, 2, 4, 3, 2>(),
    entry<4, 1, 8, 2, 3, 1>(),
    // 64
    entry<8, 1, 4, 1, 3, 3>(),
    entry<8, 1, 4, 1, 5, 3>(),
    entry<8, 1, 8, 1, 3, 2>(),
    entry<8, 1, 8, 1, 5, 2>(),
    entry<8, 1, 4, 2, 3, 2>(),
    entry<8, 1, 4, 4, 3, 1>(),
    entry<8, 1, 2, 4, 3, 2>(),
    entry<8, 1, 8, 2, 3, 1>(),
    entry<8, 1, 8, 2, 4, 1>(),
};

const Entry *find(const QmmMmaKernel &k) {
  for (const Entry &e : kEntries)
    if (e.kernel.tile_m == k.tile_m && e.kernel.tile_n == k.tile_n && e.kernel.tile_k == k.tile_k &&
        e.kernel.warps == k.warps && e.kernel.stages == k.stages)
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
  const int tile_k = kernel.tile_k;
  if (!e || a.m < 1 || a.n < 8 || a.n % 8 != 0 || a.k < tile_k || a.k % tile_k != 0 ||
      (a.group != 32 && a.group != 64 && a.group != 128) || a.k % a.group != 0 ||
      !qmm_mma_params_fit(tile_k, a.k, a.group) || a.split_k < 1 || a.split_k > kQmmMmaMaxSplit ||
      a.split_k > a.k / tile_k || !a.x || !a.q || !a.scales || !a.biases || !a.y)
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
  p.param_bytes = qmm_mma_param_bytes(a.k, a.group);
  p.split_k = a.split_k;

  // The grid of the split-K GEMV family: weight tiles along x, the split_k CTAs of a tile (one
  // cluster) along y, activation tiles along z.
  const SplitKGrid grid{a.n, a.m, kernel.tile_n, kernel.tile_m, a.split_k, e->threads};
  return LaunchStatus::from_cuda(
      launch_split_k(grid, static_cast<size_t>(e->shared_bytes), fn, &p, stream, a.dependent));
}

} // namespace hone::cuda

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
// budgeted for)>, by activation tile. The set is what won or came within 14 % of the best mma
// candidate in the H200 tunes of the four Llama-3.1-8B shapes at 16, 32 and 64 rows
// (docs/benchmark_results/2026-12-03-h200-2: 256-deep blocks of 8 warps won every cell), plus
// one 64-deep kernel per tile for a k that is not a multiple of 128. Left out after those tunes:
// the 64-deep kernels of 8 warps and 5 stages (1.2-1.6x the best) and the 16-warp kernels of 128
// weight rows at 32 and 64 activation rows (1.23-1.25x), which read the activation tile from L2
// a quarter as often but ran at half the warps per SM.
// MIN_BLOCKS is the largest that compiles without spills (-Xptxas -v, sm_90a): 64 registers
// for the 16-row tiles of one m16 tile per warp (2 or 4 CTAs of 16 or 8 warps per SM), 80-96
// at 32 rows. Two m16 tiles per warp at 64 activation rows (64 fp32 accumulators) spilled
// 40-160 bytes and are left out.
const Entry kEntries[] = {
    // 16 activation rows
    entry<2, 1, 4, 1, 3, 6>(), // 16 x 64, 64 deep, 4 warps
    entry<2, 1, 4, 2, 4, 2>(), // 16 x 64, 128 deep
    entry<2, 2, 4, 2, 4, 2>(), // 16 x 128, 128 deep
    entry<2, 1, 4, 4, 3, 2>(), // 16 x 64, 256 deep, 16 warps
    entry<2, 2, 2, 4, 3, 2>(), // 16 x 64, 256 deep
    entry<2, 1, 2, 4, 4, 4>(), // 16 x 32, 256 deep
    // 32
    entry<4, 1, 4, 1, 5, 5>(), // 32 x 64, 64 deep, 4 warps
    entry<4, 1, 4, 2, 4, 3>(), // 32 x 64, 128 deep
    entry<4, 2, 4, 2, 3, 2>(), // 32 x 128, 128 deep
    entry<4, 1, 4, 4, 3, 1>(), // 32 x 64, 256 deep, 16 warps
    entry<4, 2, 2, 4, 3, 2>(), // 32 x 64, 256 deep
    // 64
    entry<8, 1, 4, 1, 3, 3>(), // 64 x 64, 64 deep, 4 warps
    entry<8, 1, 4, 2, 3, 2>(), // 64 x 64, 128 deep
    entry<8, 1, 4, 4, 3, 1>(), // 64 x 64, 256 deep, 16 warps
    entry<8, 1, 2, 4, 3, 2>(), // 64 x 32, 256 deep
};

const Entry *find(const QmmMmaKernel &k) {
  for (const Entry &e : kEntries)
    if (e.kernel == k)
      return &e;
  return nullptr;
}

} // namespace

const std::vector<QmmMmaKernel> &qmm_mma_kernels() {
  static const std::vector<QmmMmaKernel> all = [] {
    std::vector<QmmMmaKernel> out;
    for (const Entry &e : kEntries)
      out.push_back(e.kernel);
#ifdef HONE_QMM_WGMMA_RS
    for (const QmmMmaKernel &k : qmm_rs_kernels())
      out.push_back(k);
#endif
    return out;
  }();
  return all;
}

KernelResources qmm_mma_resources(const QmmMmaKernel &kernel, bool stream_k) {
#ifdef HONE_QMM_WGMMA_RS
  if (kernel.engine != kQmmEngineMma)
    return qmm_rs_resources(kernel, stream_k);
#endif
  const Entry *e = stream_k ? nullptr : find(kernel);
  if (!e)
    return {};
  KernelResources r = kernel_detail::resources_of(e->fn);
  r.shared_bytes += static_cast<size_t>(e->shared_bytes);
  return r;
}

size_t qmm_mma_workspace_bytes(const QmmMmaKernel &kernel, int m, int n, int k, bool stream_k) {
#ifdef HONE_QMM_WGMMA_RS
  if (kernel.engine != kQmmEngineMma)
    return qmm_rs_workspace_bytes(kernel, m, n, k, stream_k);
#else
  (void)kernel, (void)m, (void)n, (void)k, (void)stream_k;
#endif
  return 0; // split-K partials live in the cluster's shared memory
}

LaunchStatus qmm_mma_launch(const QmmMmaKernel &kernel, const QmmMmaArgs &a, void *stream) {
#ifdef HONE_QMM_WGMMA_RS
  if (kernel.engine != kQmmEngineMma)
    return qmm_rs_launch(kernel, a, stream);
#endif
  const Entry *e = a.stream_k ? nullptr : find(kernel);
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

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
// k_slices = warps_k x split_k fixes the K summation order (see gemv_bf16.cuh): configs of
// one path with equal k_slices give bit-identical rows for every row count.
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"

#include <algorithm>

#include <cuda_runtime.h>

#include "cuda/kernels/gemv_bf16/gemv_bf16.cuh"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"

namespace hone::cuda {

namespace {

using gemv_bf16_detail::Params;
using KernelFn = void (*)(Params);

// One compiled kernel: the template parameters it fixes and its limits.
struct KernelEntry {
  int path;             // 0 fma, 1 mma
  int rows_per_cta;     // NT * 8 (mma) or R (fma)
  int outputs_per_warp; // MT * 16 (mma) or O (fma)
  int max_threads;      // __launch_bounds__
  int floats_per_warp;  // partial written to shared memory per warp
  KernelFn fn;
  KernelFn async_fn = nullptr;  // same kernel with the cp.async pipeline (S > 0), if compiled
  int async_bytes_per_warp = 0; // its lane-private ring: S x (2 MT + NT) x 512 bytes
};

template <int NT, int MT, int J, int MAX_THREADS, int S = 0> constexpr KernelEntry mma_entry() {
  KernelEntry e{
      1,           NT * 8,        MT * 16,
      MAX_THREADS, MT * NT * 128, &gemv_bf16_detail::gemv_bf16_mma_kernel<NT, MT, J, MAX_THREADS>};
  if constexpr (S > 0) {
    e.async_fn = &gemv_bf16_detail::gemv_bf16_mma_kernel<NT, MT, J, MAX_THREADS, S>;
    e.async_bytes_per_warp = S * (2 * MT + NT) * 512;
  }
  return e;
}
template <int R, int O, int U, int MAX_THREADS> constexpr KernelEntry fma_entry() {
  return {0,           R,     O,
          MAX_THREADS, O * R, &gemv_bf16_detail::gemv_bf16_fma_kernel<R, O, U, MAX_THREADS>};
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

constexpr size_t kMaxSharedBytes = 48 * 1024; // default dynamic shared-memory limit
// async configs: partials + ring, within the opt-in limit of sm_80 (163 KB) and sm_90 (227 KB).
constexpr size_t kMaxAsyncSharedBytes = 160 * 1024;

const KernelEntry *find_kernel(const GemvBf16Config &c) {
  for (const KernelEntry &e : kKernels)
    if (e.path == c.path && e.rows_per_cta == c.rows_per_cta &&
        e.outputs_per_warp == c.outputs_per_warp)
      return &e;
  return nullptr;
}

size_t shared_bytes(const KernelEntry &e, int warps) {
  return static_cast<size_t>(warps) * static_cast<size_t>(e.floats_per_warp) * sizeof(float);
}

// Largest dynamic shared memory a block may opt into; the pipelined kernels are opted in once.
size_t async_shared_limit() {
  static const size_t limit = [] {
    int device = 0, optin = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
            cudaSuccess) {
      (void)cudaGetLastError();
      return size_t{0};
    }
    for (const KernelEntry &e : kKernels)
      if (e.async_fn &&
          cudaFuncSetAttribute(e.async_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) !=
              cudaSuccess) {
        (void)cudaGetLastError();
        return size_t{0};
      }
    return std::min(static_cast<size_t>(optin), kMaxAsyncSharedBytes);
  }();
  return limit;
}

size_t async_ring_bytes(const KernelEntry &e, int warps) {
  return static_cast<size_t>(warps) * static_cast<size_t>(e.async_bytes_per_warp);
}

// (warps_k, split_k, warps_n) per path. Within a path, entries with equal warps_k * split_k
// share the K summation order.
struct CtaShape {
  int warps_k, split_k, warps_n;
};
constexpr CtaShape kMmaShapes[] = {
    {1, 1, 4},                        // k_slices 1
    {2, 1, 1},  {2, 1, 2},            // 2
    {4, 1, 1},  {4, 1, 2}, {2, 2, 1}, // 4
    {8, 1, 1},  {4, 2, 1}, {4, 2, 2}, // 8
    {16, 1, 1}, {8, 2, 1}, {4, 4, 1}  // 16
};
constexpr CtaShape kFmaShapes[] = {{1, 1, 4}, {4, 1, 2}, {8, 1, 1}, {4, 2, 1}};

std::vector<GemvBf16Config> build_configs() {
  std::vector<GemvBf16Config> out;
  for (const KernelEntry &e : kKernels) {
    const bool mma = e.path == 1;
    const CtaShape *begin = mma ? std::begin(kMmaShapes) : std::begin(kFmaShapes);
    const CtaShape *end = mma ? std::end(kMmaShapes) : std::end(kFmaShapes);
    for (const CtaShape *s = begin; s != end; ++s) {
      const int warps = s->warps_k * s->warps_n;
      if (warps * 32 > e.max_threads || shared_bytes(e, warps) > kMaxSharedBytes)
        continue;
      GemvBf16Config c;
      c.path = e.path;
      c.rows_per_cta = e.rows_per_cta;
      c.warps = warps;
      c.outputs_per_warp = e.outputs_per_warp;
      c.split_k = s->split_k;
      c.vec = 16;
      c.warps_k = s->warps_k;
      out.push_back(c);
      if (e.async_fn &&
          shared_bytes(e, warps) + async_ring_bytes(e, warps) <= kMaxAsyncSharedBytes) {
        c.async = 1;
        out.push_back(c);
      }
    }
  }
  return out;
}

} // namespace

const std::vector<GemvBf16Config> &gemv_bf16_configs() {
  static const std::vector<GemvBf16Config> configs = build_configs();
  return configs;
}

KernelResources gemv_bf16_resources(const GemvBf16Config &config) {
  KernelResources res;
  const KernelEntry *e = find_kernel(config);
  if (!e)
    return res;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, e->fn) != cudaSuccess) {
    (void)cudaGetLastError();
    return res;
  }
  res.registers = attr.numRegs;
  res.local_bytes = attr.localSizeBytes;
  res.shared_bytes = attr.sharedSizeBytes + shared_bytes(*e, config.warps) +
                     (config.async ? async_ring_bytes(*e, config.warps) : 0);
  res.max_threads = attr.maxThreadsPerBlock;
  return res;
}

int gemv_bf16_launch(const GemvBf16Config &config, const GemvBf16Args &args, void *stream) {
  const KernelEntry *e = find_kernel(config);
  if (!e || config.vec != 16 || (config.async != 0 && !e->async_fn) || config.warps_k < 1 ||
      config.split_k < 1 || config.warps % config.warps_k != 0 ||
      config.warps * 32 > e->max_threads || args.rows < 1 || args.n < 1 || args.k < 8 ||
      args.k % 8 != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  Params p;
  p.x = static_cast<const uint16_t *>(args.x);
  p.w = static_cast<const uint16_t *>(args.w);
  p.y = static_cast<uint16_t *>(args.y);
  p.rows = args.rows;
  p.n = args.n;
  p.k = args.k;
  p.warps_n = config.warps / config.warps_k;
  p.warps_k = config.warps_k;
  p.split_k = config.split_k;
  p.slice_granules = gemv_bf16_slice_granules(config, args.k);

  KernelFn fn = e->fn;
  size_t smem = shared_bytes(*e, config.warps);
  if (config.async) {
    smem += async_ring_bytes(*e, config.warps);
    if (smem > async_shared_limit())
      return static_cast<int>(cudaErrorInvalidConfiguration);
    fn = e->async_fn;
  }

  const SplitKGrid grid{.n = args.n,
                        .rows = args.rows,
                        .outputs_per_cta = p.warps_n * config.outputs_per_warp,
                        .rows_per_cta = config.rows_per_cta,
                        .split_k = config.split_k,
                        .threads = config.warps * 32};
  return launch_split_k(grid, smem, reinterpret_cast<const void *>(fn), &p, stream);
}

} // namespace hone::cuda

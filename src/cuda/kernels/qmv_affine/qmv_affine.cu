// qmv.affine kernels: the compiled kernel table, the config list built on it, resources and
// launch. Shape logic (tactics, defaults, can_implement) lives in qmv_affine_config.cpp.
//
// Tactic fields (`qmv.affine.mma:...`):
//   rows_per_cta      activation rows per CTA: 8, 16 or 32; more rows run as more CTAs along
//                     grid.z, which re-read the same packed weights (mostly from L2)
//   warps             warps per CTA = warps_n x warps_k
//   warps_k           warps of one CTA that take adjacent K slices
//   outputs_per_warp  weight rows per warp: 16 or 32 (one or two m16 tiles)
//   split_k           CTAs of one thread-block cluster that take further K slices (sm_90)
//   async             (optional, default 0) 1: the packed words of the next S chunks stream
//                     through a lane-private cp.async ring in shared memory instead of a
//                     register double buffer; bit-identical to async=0
// k_slices = warps_k x split_k fixes the K summation order (see qmv_affine.cuh): configs with
// equal k_slices give bit-identical rows for every row count.
#include "cuda/kernels/qmv_affine/qmv_affine.h"

#include <algorithm>
#include <bit>

#include <cuda_runtime.h>

#include "cuda/kernels/qmv_affine/qmv_affine.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"

namespace hone::cuda {

namespace {

using qmv_affine_detail::Params;
using KernelFn = void (*)(Params);

struct KernelEntry {
  int bits;
  int rows_per_cta;     // NT * 8
  int outputs_per_warp; // MT * 16
  int max_threads;      // __launch_bounds__
  int floats_per_warp;  // partial written to shared memory per warp
  // [factored] the register-pipelined kernel and the same kernel with the cp.async ring
  KernelFn fn[2];
  KernelFn async_fn[2];
  int async_bytes_per_warp = 0; // the ring: S x 2 MT x 512 bytes
};

template <int BITS, int NT, int MT, int J, int S, int MAX_THREADS> constexpr KernelEntry entry() {
  using qmv_affine_detail::qmv_affine_mma_kernel;
  return {BITS,
          NT * 8,
          MT * 16,
          MAX_THREADS,
          MT * NT * 128,
          {&qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, false>,
           &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, true>},
          {&qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, S, false>,
           &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, S, true>},
          S * 2 * MT * 512};
}

// NOTE: J (chunks of weights in flight per warp) is sized so that the weight fragments, their
// prefetch, the activation fragments and the accumulators fit the register cap of
// MAX_THREADS without spilling (checked with -Xptxas -v).
// <BITS, NT, MT, J, S, MAX_THREADS>
const KernelEntry kKernels[] = {
    entry<4, 1, 1, 1, 4, 512>(), entry<4, 1, 2, 2, 4, 256>(), entry<4, 2, 1, 2, 8, 256>(),
    entry<4, 2, 2, 1, 4, 256>(), entry<4, 4, 1, 1, 4, 256>(), entry<8, 1, 1, 2, 4, 512>(),
    entry<8, 1, 2, 2, 4, 256>(), entry<8, 2, 1, 2, 8, 256>(), entry<8, 2, 2, 1, 4, 256>(),
    entry<8, 4, 1, 1, 4, 256>(),
};

constexpr size_t kMaxSharedBytes = 48 * 1024; // default dynamic shared-memory limit
// async configs: partials + ring, within the opt-in limit of sm_80 (163 KB) and sm_90 (227 KB).
constexpr size_t kMaxAsyncSharedBytes = 160 * 1024;

// Largest dynamic shared memory a block may opt into; the ring kernels are opted in once.
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
      for (KernelFn fn : e.async_fn)
        if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) !=
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

const KernelEntry *find_kernel(const QmvAffineConfig &c, int bits) {
  for (const KernelEntry &e : kKernels)
    if (e.bits == bits && e.rows_per_cta == c.rows_per_cta &&
        e.outputs_per_warp == c.outputs_per_warp && c.path == 1)
      return &e;
  return nullptr;
}

size_t shared_bytes(const KernelEntry &e, int warps) {
  return static_cast<size_t>(warps) * static_cast<size_t>(e.floats_per_warp) * sizeof(float);
}

// (warps_k, split_k, warps_n). Entries with equal warps_k * split_k share the K order.
struct CtaShape {
  int warps_k, split_k, warps_n;
};
constexpr CtaShape kShapes[] = {
    {1, 1, 4},                        // k_slices 1
    {2, 1, 1},  {2, 1, 2},            // 2
    {4, 1, 1},  {4, 1, 2}, {2, 2, 1}, // 4
    {8, 1, 1},  {4, 2, 1}, {4, 2, 2}, // 8
    {16, 1, 1}, {8, 2, 1}, {4, 4, 1}  // 16
};

std::vector<QmvAffineConfig> build_configs(int bits) {
  std::vector<QmvAffineConfig> out;
  for (const KernelEntry &e : kKernels) {
    if (e.bits != bits)
      continue;
    for (const CtaShape &s : kShapes) {
      const int warps = s.warps_k * s.warps_n;
      if (warps * 32 > e.max_threads || shared_bytes(e, warps) > kMaxSharedBytes)
        continue;
      QmvAffineConfig c;
      c.path = 1;
      c.rows_per_cta = e.rows_per_cta;
      c.warps = warps;
      c.warps_k = s.warps_k;
      c.outputs_per_warp = e.outputs_per_warp;
      c.split_k = s.split_k;
      out.push_back(c);
      if (shared_bytes(e, warps) + async_ring_bytes(e, warps) <= kMaxAsyncSharedBytes) {
        c.async = 1;
        out.push_back(c);
      }
    }
  }
  return out;
}

} // namespace

const std::vector<QmvAffineConfig> &qmv_affine_configs(int bits) {
  static const std::vector<QmvAffineConfig> configs4 = build_configs(4);
  static const std::vector<QmvAffineConfig> configs8 = build_configs(8);
  static const std::vector<QmvAffineConfig> none;
  return bits == 4 ? configs4 : bits == 8 ? configs8 : none;
}

KernelResources qmv_affine_resources(const QmvAffineConfig &config, int bits) {
  KernelResources res;
  const KernelEntry *e = find_kernel(config, bits);
  if (!e)
    return res;
  // The worst of the config's two kernels (factored and per-weight dequantisation).
  for (int factored = 0; factored < 2; ++factored) {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, config.async ? e->async_fn[factored] : e->fn[factored]) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return KernelResources{};
    }
    res.registers = std::max(res.registers, attr.numRegs);
    res.local_bytes = std::max(res.local_bytes, attr.localSizeBytes);
    res.max_threads =
        factored ? std::min(res.max_threads, attr.maxThreadsPerBlock) : attr.maxThreadsPerBlock;
    res.shared_bytes = attr.sharedSizeBytes;
  }
  res.shared_bytes +=
      shared_bytes(*e, config.warps) + (config.async ? async_ring_bytes(*e, config.warps) : 0);
  return res;
}

int qmv_affine_launch(const QmvAffineConfig &config, const QmvAffineArgs &args, void *stream) {
  const KernelEntry *e = find_kernel(config, args.bits);
  if (!e || (config.async != 0 && config.async != 1) || config.warps_k < 1 || config.split_k < 1 ||
      config.warps % config.warps_k != 0 || config.warps * 32 > e->max_threads || args.rows < 1 ||
      args.n < 1 || args.k < 32 || args.k % 32 != 0 ||
      (args.group != 32 && args.group != 64 && args.group != 128) || args.k % args.group != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  Params p;
  p.x = static_cast<const uint16_t *>(args.x);
  p.q = args.q;
  p.scales = static_cast<const uint16_t *>(args.scales);
  p.biases = static_cast<const uint16_t *>(args.biases);
  p.y = static_cast<uint16_t *>(args.y);
  p.rows = args.rows;
  p.n = args.n;
  p.k = args.k;
  p.groups_per_row = args.k / args.group;
  p.group_shift = std::countr_zero(static_cast<unsigned>(args.group));
  p.warps_n = config.warps / config.warps_k;
  p.warps_k = config.warps_k;
  p.split_k = config.split_k;
  p.slice_chunks = qmv_affine_slice_chunks(config, args.k, args.bits);
  p.factored = args.group >= qmv_affine_chunk_k(args.bits) ? 1 : 0;

  KernelFn fn = e->fn[p.factored];
  size_t smem = shared_bytes(*e, config.warps);
  if (config.async) {
    smem += async_ring_bytes(*e, config.warps);
    if (smem > async_shared_limit())
      return static_cast<int>(cudaErrorInvalidConfiguration);
    fn = e->async_fn[p.factored];
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

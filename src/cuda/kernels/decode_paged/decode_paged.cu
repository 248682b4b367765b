// decode.paged kernels: the compiled kernels (one split and one merge kernel per head_dim, and
// the page check), occupancy, resources and launch. Host logic (tactics, validation, the
// split, the default kv_chunk): decode_paged_config.cpp. Device code and summation order:
// decode_paged.cuh.
//
// Tactic fields (`decode.paged:kv_chunk=..,warps=..`):
//   kv_chunk  tokens per work item of a request (a multiple of page_size; 0: no split); the
//             summation order of a request depends on it
//   warps     warps per CTA (2, 4, 8), each streaming every warps-th 16-token tile of the
//             chunk through its own cp.async ring; also part of the summation order
//   kv_heads  (spelled only when not 1) KV heads per CTA, 2/4/8 dividing hkv and warps: warp w
//             serves KV head w % kv_heads, so one CTA streams whole token rows of kv_heads heads
//             (fewer, longer contiguous reads); part of the summation order
//   fused_merge  (spelled only when 1) the partial states of a split request are merged by the
//             split kernel's last CTA of each (request, KV head) instead of a second kernel;
//             same result bits
#include "cuda/kernels/decode_paged/decode_paged.h"

#include <algorithm>
#include <bit>
#include <mutex>

#include <cuda_runtime.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/decode_paged/decode_paged.cuh"
#include "cuda/kernels/decode_paged/decode_paged_shape.h"

namespace hone::cuda {

namespace {

using decode_paged_detail::Params;
using KernelFn = void (*)(Params);

static_assert(decode_paged_detail::Traits<64>::kStages == decode_paged_stages(64));
static_assert(decode_paged_detail::Traits<128>::kStages == decode_paged_stages(128));
static_assert(decode_paged_detail::Traits<256>::kStages == decode_paged_stages(256));

struct KernelEntry {
  int head_dim;
  KernelFn split;
  KernelFn merge;
};

const KernelEntry kKernels[] = {
    {64, &decode_paged_detail::split_kernel<64>, &decode_paged_detail::merge_kernel<64>},
    {128, &decode_paged_detail::split_kernel<128>, &decode_paged_detail::merge_kernel<128>},
    {256, &decode_paged_detail::split_kernel<256>, &decode_paged_detail::merge_kernel<256>},
};

const KernelEntry *find_kernel(int head_dim) {
  for (const KernelEntry &e : kKernels)
    if (e.head_dim == head_dim)
      return &e;
  return nullptr;
}

int warps_index(int warps) { return warps == 2 ? 0 : warps == 4 ? 1 : warps == 8 ? 2 : -1; }

// Opts every split kernel into the shared memory of its largest config, once per process.
cudaError_t opt_in_shared_memory() {
  static cudaError_t status = [] {
    for (const KernelEntry &e : kKernels) {
      size_t most = 0;
      for (int warps : {2, 4, 8})
        if (const size_t bytes = decode_paged_shared_bytes(warps, e.head_dim);
            bytes <= kDecodePagedMaxSharedBytes)
          most = std::max(most, bytes);
      const cudaError_t s = cudaFuncSetAttribute(
          e.split, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(most));
      if (s != cudaSuccess) {
        (void)cudaGetLastError();
        return s;
      }
    }
    return cudaSuccess;
  }();
  return status;
}

} // namespace

int decode_paged_ctas_per_sm(int warps, int head_dim) {
  const KernelEntry *e = find_kernel(head_dim);
  const int w = warps_index(warps);
  const size_t smem = decode_paged_shared_bytes(warps, head_dim);
  if (!e || w < 0 || smem > kDecodePagedMaxSharedBytes || opt_in_shared_memory() != cudaSuccess)
    return 0;
  static std::mutex mutex;
  static int known[3][3] = {}; // [head_dim 64/128/256][warps 2/4/8]; 0: not yet queried
  const int d = head_dim == 64 ? 0 : head_dim == 128 ? 1 : 2;
  std::lock_guard<std::mutex> lock(mutex);
  if (known[d][w] == 0) {
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, e->split, warps * 32, smem) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    known[d][w] = blocks;
  }
  return known[d][w];
}

KernelResources decode_paged_resources(int head_dim) {
  KernelResources res;
  const KernelEntry *e = find_kernel(head_dim);
  if (!e)
    return res;
  for (KernelFn fn : {e->split, e->merge}) {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, fn) != cudaSuccess) {
      (void)cudaGetLastError();
      return KernelResources{};
    }
    res.registers = std::max(res.registers, attr.numRegs);
    res.local_bytes = std::max(res.local_bytes, attr.localSizeBytes);
    res.max_threads = fn == e->split ? attr.maxThreadsPerBlock : res.max_threads;
    res.shared_bytes = std::max(res.shared_bytes, attr.sharedSizeBytes);
  }
  return res;
}

int decode_paged_prefetch_tiles(int prefetch_kib, int warps, int head_dim) {
  if (prefetch_kib <= 0 || warps <= 0 || head_dim <= 0)
    return 0;
  // One tile round of the CTA: every warp's K and V tiles of 16 tokens x head_dim bf16.
  const int64_t round = int64_t{warps} * kDecodePagedTileTokens * head_dim * 2 * 2;
  const int64_t tiles = (int64_t{prefetch_kib} * 1024 + round - 1) / round;
  return static_cast<int>(std::min<int64_t>(tiles, 1 << 16));
}

LaunchStatus decode_paged_launch(const DecodePagedConfig &config, const DecodePagedArgs &args,
                                 void *stream) {
  const KernelEntry *e = find_kernel(args.head_dim);
  if (!e || warps_index(config.warps) < 0 || args.batch < 1 || args.hkv < 1 ||
      args.hq != args.hkv * (args.hq / args.hkv) || args.hq / args.hkv > kDecodePagedMaxGroup ||
      (args.page_size != 16 && args.page_size != 32 && args.page_size != 64) ||
      config.kv_chunk < 0 || config.kv_chunk % args.page_size != 0 || args.split.chunks < 1 ||
      args.chain.prefetch_kib < 0 || args.chain.prefetch_kib > kDecodePagedMaxPrefetchKib ||
      args.split.chunks * args.hkv > 0x7fffffff || args.split.max_chunks < 1 || args.hq > 65535 ||
      !decode_paged_can_implement(config, args.hkv, args.head_dim, args.page_size, nullptr))
    return LaunchStatus::invalid_value();
  const bool merge = args.split.max_chunks > 1;
  const bool fused = merge && config.fused_merge == 1;
  if (merge &&
      (args.workspace == nullptr ||
       args.workspace_bytes < decode_paged_workspace_bytes(args.split, args.hq, args.head_dim)))
    return LaunchStatus::invalid_value();
  if (fused && (args.counters == nullptr ||
                args.counter_count < decode_paged_counter_count(args.batch, args.hkv)))
    return LaunchStatus::invalid_value();
  const size_t smem = decode_paged_shared_bytes(config.warps, args.head_dim);
  if (smem > kDecodePagedMaxSharedBytes)
    return LaunchStatus::invalid_configuration();
  if (const cudaError_t s = opt_in_shared_memory(); s != cudaSuccess)
    return LaunchStatus::from_cuda(static_cast<int>(s));

  Params p{};
  p.q = static_cast<const uint16_t *>(args.q);
  p.k_cache = static_cast<const uint16_t *>(args.k_cache);
  p.v_cache = static_cast<const uint16_t *>(args.v_cache);
  p.kv_indptr = args.kv_indptr;
  p.kv_indices = args.kv_indices;
  p.kv_last_page_len = args.kv_last_page_len;
  p.o = static_cast<uint16_t *>(args.o);
  p.lse = args.lse;
  if (merge) {
    auto *base = static_cast<unsigned char *>(args.workspace);
    p.partial_lse = reinterpret_cast<float *>(base);
    p.partial_o =
        reinterpret_cast<float *>(base + decode_paged_partial_o_offset(args.split, args.hq));
    p.counters = fused ? args.counters : nullptr;
  }
  p.batch = args.batch;
  p.hq = args.hq;
  p.hkv = args.hkv;
  p.group = args.hq / args.hkv;
  p.page_size = args.page_size;
  p.page_shift = std::countr_zero(static_cast<unsigned>(args.page_size));
  p.chunk_pages = config.kv_chunk / args.page_size;
  p.cta_heads = config.kv_heads;
  p.scale_log2 = args.scale * 1.4426950408889634f;
  // Only a dependent launch has a wait to prefetch before.
  p.prefetch_tiles =
      args.chain.dependent && pdl_supported()
          ? decode_paged_prefetch_tiles(args.chain.prefetch_kib, config.warps, args.head_dim)
          : 0;

  // item x (hkv / kv_heads) + head group
  const dim3 grid(static_cast<unsigned>(args.split.chunks * (args.hkv / config.kv_heads)));
  if (const LaunchStatus s = kernel_detail::launch_maybe_dependent(
          e->split, grid, dim3(32 * config.warps), smem, stream, args.chain.dependent, p);
      !s.ok() || !merge || fused)
    return s;
  // The merge kernel: a dependent launch of the split kernel (where the device has PDL).
  return kernel_detail::launch_maybe_dependent(
      e->merge, dim3(static_cast<unsigned>(args.batch), static_cast<unsigned>(args.hq)),
      dim3(32 * decode_paged_detail::kMergeWarps), 0, stream, true, p);
}

LaunchStatus decode_paged_check_pages_launch(const int32_t *kv_indices, int64_t begin, int64_t end,
                                             int num_pages, int32_t *first_bad, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = cudaMemsetAsync(first_bad, 0x7f, sizeof(int32_t), s); e != cudaSuccess)
    return LaunchStatus::from_cuda(static_cast<int>(e));
  if (end <= begin)
    return LaunchStatus{};
  const int64_t blocks = std::min<int64_t>((end - begin + 255) / 256, 1024);
  decode_paged_detail::check_pages_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(
      kv_indices, begin, end, num_pages, first_bad);
  return LaunchStatus::from_cuda(static_cast<int>(cudaGetLastError()));
}

} // namespace hone::cuda

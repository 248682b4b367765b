// rope kernels: the compiled kernels (one per vec), the config list, resources and launch.
// Host logic: rope_config.cpp; device code: rope.cuh.
//
// Tactic fields (`rope.neox:vec=..,threads=..`):
//   vec      bf16 per vector load of each half of a head (8: 16 bytes, 4: 8 bytes)
//   threads  threads per CTA
#include "cuda/kernels/rope/rope.h"

#include <cuda_runtime.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/rope/rope.cuh"

namespace hone::cuda {

namespace {

using rope_detail::Params;
using KernelFn = void (*)(Params);

KernelFn kernel_of(int vec) {
  return vec == 8   ? &rope_detail::rope_kernel<8>
         : vec == 4 ? &rope_detail::rope_kernel<4>
                    : nullptr;
}

} // namespace

const std::vector<RopeConfig> &rope_configs() {
  static const std::vector<RopeConfig> configs = [] {
    std::vector<RopeConfig> out;
    for (int vec : {8, 4})
      for (int threads : {64, 128, 256})
        out.push_back({vec, threads});
    return out;
  }();
  return configs;
}

KernelResources rope_resources(const RopeConfig &config) {
  const KernelFn fn = kernel_of(config.vec);
  return fn ? kernel_detail::resources_of(fn) : KernelResources{};
}

LaunchStatus rope_launch(const RopeConfig &config, const RopeArgs &args, void *stream) {
  const KernelFn fn = kernel_of(config.vec);
  if (!fn || args.rows < 1 || args.hq < 1 || args.hkv < 1 || args.head_dim < 2 * config.vec ||
      args.head_dim > kRopeMaxHeadDim || (args.head_dim / 2) % config.vec != 0 ||
      (config.threads != 64 && config.threads != 128 && config.threads != 256) || !args.q ||
      !args.k || !args.q_out || !args.positions || !args.inv_freq)
    return LaunchStatus::invalid_value();
  const bool paged = args.k_cache != nullptr;
  if (paged ? (!args.v || !args.v_cache || !args.kv_indptr || !args.kv_indices ||
               !args.kv_last_page_len || args.num_pages < 1 || args.page_size < 1)
            : (!args.k_out || args.bias != nullptr))
    return LaunchStatus::invalid_value();
  Params p{};
  p.q = static_cast<const uint16_t *>(args.q);
  p.k = static_cast<const uint16_t *>(args.k);
  p.q_out = static_cast<uint16_t *>(args.q_out);
  p.k_out = static_cast<uint16_t *>(args.k_out);
  p.positions = args.positions;
  p.hq = args.hq;
  p.hkv = args.hkv;
  p.heads = args.hq + args.hkv * (paged ? 2 : 1);
  p.head_dim = args.head_dim;
  p.pieces = args.head_dim / 2 / config.vec;
  p.items = static_cast<int64_t>(args.rows) * p.heads * p.pieces;
  const int64_t q_row = static_cast<int64_t>(args.hq) * args.head_dim;
  const int64_t k_row = static_cast<int64_t>(args.hkv) * args.head_dim;
  p.q_stride = args.q_stride > 0 ? args.q_stride : q_row;
  p.k_stride = args.k_stride > 0 ? args.k_stride : k_row;
  p.q_out_stride = args.q_out_stride > 0 ? args.q_out_stride : q_row;
  p.k_out_stride = args.k_out_stride > 0 ? args.k_out_stride : k_row;
  p.v_stride = args.v_stride > 0 ? args.v_stride : k_row;
  for (int64_t s : {p.q_stride, p.k_stride, p.q_out_stride, p.k_out_stride, p.v_stride})
    if (s % config.vec != 0)
      return LaunchStatus::invalid_value();
  p.bias = static_cast<const uint16_t *>(args.bias);
  if (paged) {
    p.v = static_cast<const uint16_t *>(args.v);
    p.k_cache = static_cast<uint16_t *>(args.k_cache);
    p.v_cache = static_cast<uint16_t *>(args.v_cache);
    p.kv_indptr = args.kv_indptr;
    p.kv_indices = args.kv_indices;
    p.kv_last_page_len = args.kv_last_page_len;
    p.num_pages = args.num_pages;
    p.page_size = args.page_size;
  }
  for (int i = 0; i < args.head_dim / 2; ++i)
    p.inv_freq[i] = args.inv_freq[i];
  const int64_t blocks = (p.items + config.threads - 1) / config.threads;
  if (blocks > 0x7fffffff)
    return LaunchStatus::invalid_value();
  return kernel_detail::launch_maybe_dependent(fn, dim3(static_cast<unsigned>(blocks)),
                                               dim3(static_cast<unsigned>(config.threads)), 0,
                                               stream, args.dependent, p);
}

} // namespace hone::cuda

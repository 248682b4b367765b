// kv_append kernels: the compiled kernels (one per vec), the config list, resources and
// launch. Host logic: kv_append_config.cpp; device code: kv_append.cuh.
//
// Tactic fields (`kv_append.paged:vec=..,threads=..`):
//   vec      bf16 per vector copy (8: 16 bytes, 4: 8 bytes)
//   threads  threads per CTA (a CTA copies threads x vec elements of one request's K or V)
#include "cuda/kernels/kv_append/kv_append.h"

#include <cuda_runtime.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/kv_append/kv_append.cuh"

namespace hone::cuda {

namespace {

using kv_append_detail::Params;
using KernelFn = void (*)(Params);

KernelFn kernel_of(int vec) {
  return vec == 8   ? &kv_append_detail::kv_append_kernel<8>
         : vec == 4 ? &kv_append_detail::kv_append_kernel<4>
                    : nullptr;
}

} // namespace

const std::vector<KvAppendConfig> &kv_append_configs() {
  static const std::vector<KvAppendConfig> configs = [] {
    std::vector<KvAppendConfig> out;
    for (int vec : {8, 4})
      for (int threads : {32, 64, 128, 256})
        out.push_back({vec, threads});
    return out;
  }();
  return configs;
}

KernelResources kv_append_resources(const KvAppendConfig &config) {
  const KernelFn fn = kernel_of(config.vec);
  return fn ? kernel_detail::resources_of(fn) : KernelResources{};
}

LaunchStatus kv_append_launch(const KvAppendConfig &config, const KvAppendArgs &args,
                              void *stream) {
  const KernelFn fn = kernel_of(config.vec);
  const int64_t token = static_cast<int64_t>(args.hkv) * args.head_dim;
  if (!fn || args.batch < 1 || args.batch > 65535 || args.hkv < 1 || args.head_dim < 1 ||
      args.head_dim % config.vec != 0 || token > (int64_t{1} << 24) || args.page_size < 1 ||
      args.num_pages < 1 || config.threads < 32 || config.threads > 256 ||
      config.threads % 32 != 0 || !args.k || !args.v || !args.k_cache || !args.v_cache ||
      !args.kv_indptr || !args.kv_indices || !args.kv_last_page_len)
    return LaunchStatus::invalid_value();
  Params p{};
  p.k = static_cast<const uint16_t *>(args.k);
  p.v = static_cast<const uint16_t *>(args.v);
  p.k_cache = static_cast<uint16_t *>(args.k_cache);
  p.v_cache = static_cast<uint16_t *>(args.v_cache);
  p.kv_indptr = args.kv_indptr;
  p.kv_indices = args.kv_indices;
  p.kv_last_page_len = args.kv_last_page_len;
  p.token_elements = static_cast<int>(token);
  p.page_size = args.page_size;
  p.num_pages = args.num_pages;
  p.k_stride = args.k_stride > 0 ? args.k_stride : token;
  p.v_stride = args.v_stride > 0 ? args.v_stride : token;
  if (p.k_stride % config.vec != 0 || p.v_stride % config.vec != 0)
    return LaunchStatus::invalid_value();
  const int64_t spans = (token / config.vec + config.threads - 1) / config.threads;
  return kernel_detail::launch_maybe_dependent(
      fn, dim3(static_cast<unsigned>(spans), static_cast<unsigned>(args.batch), 2),
      dim3(static_cast<unsigned>(config.threads)), 0, stream, args.dependent, p);
}

} // namespace hone::cuda

// silu_mul kernels: the compiled kernels (vec x vectors), the config list, resources and
// launch. Host logic: silu_mul_config.cpp; device code: silu_mul.cuh.
//
// Tactic fields (`silu_mul.bf16:vec=..,vectors=..,threads=..`):
//   vec      bf16 per vector load (8: 16 bytes, 4: 8 bytes)
//   vectors  vectors per thread (loads in flight before the first store)
//   threads  threads per CTA
#include "cuda/kernels/silu_mul/silu_mul.h"

#include <cuda_runtime.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/silu_mul/silu_mul.cuh"

namespace hone::cuda {

namespace {

using silu_mul_detail::Params;
using KernelFn = void (*)(Params);

KernelFn kernel_of(int vec, int vectors) {
  using silu_mul_detail::silu_mul_kernel;
  if (vec == 8)
    return vectors == 1   ? &silu_mul_kernel<8, 1>
           : vectors == 2 ? &silu_mul_kernel<8, 2>
           : vectors == 4 ? &silu_mul_kernel<8, 4>
                          : nullptr;
  if (vec == 4)
    return vectors == 1   ? &silu_mul_kernel<4, 1>
           : vectors == 2 ? &silu_mul_kernel<4, 2>
           : vectors == 4 ? &silu_mul_kernel<4, 4>
                          : nullptr;
  return nullptr;
}

} // namespace

const std::vector<SiluMulConfig> &silu_mul_configs() {
  static const std::vector<SiluMulConfig> configs = [] {
    std::vector<SiluMulConfig> out;
    for (int vec : {8, 4})
      for (int vectors : {1, 2, 4})
        for (int threads : {64, 128, 256, 512})
          out.push_back({vec, vectors, threads});
    return out;
  }();
  return configs;
}

KernelResources silu_mul_resources(const SiluMulConfig &config) {
  const KernelFn fn = kernel_of(config.vec, config.vectors);
  return fn ? kernel_detail::resources_of(fn) : KernelResources{};
}

LaunchStatus silu_mul_launch(const SiluMulConfig &config, const SiluMulArgs &args, void *stream) {
  const KernelFn fn = kernel_of(config.vec, config.vectors);
  if (!fn || args.rows < 1 || args.rows > 65535 || args.inter < config.vec ||
      args.inter % config.vec != 0 || config.threads < 32 || config.threads > 512 ||
      config.threads % 32 != 0 || !args.gate || !args.up || !args.out)
    return LaunchStatus::invalid_value();
  Params p{};
  p.gate = static_cast<const uint16_t *>(args.gate);
  p.up = static_cast<const uint16_t *>(args.up);
  p.out = static_cast<uint16_t *>(args.out);
  p.rows = args.rows;
  p.inter = args.inter;
  p.gate_stride = args.gate_stride > 0 ? args.gate_stride : args.inter;
  p.up_stride = args.up_stride > 0 ? args.up_stride : args.inter;
  p.out_stride = args.out_stride > 0 ? args.out_stride : args.inter;
  for (int64_t s : {p.gate_stride, p.up_stride, p.out_stride})
    if (s % config.vec != 0)
      return LaunchStatus::invalid_value();
  const int64_t per_cta = static_cast<int64_t>(config.threads) * config.vectors;
  const int64_t spans = (args.inter / config.vec + per_cta - 1) / per_cta;
  return kernel_detail::launch_maybe_dependent(
      fn, dim3(static_cast<unsigned>(spans), static_cast<unsigned>(args.rows)),
      dim3(static_cast<unsigned>(config.threads)), 0, stream, args.dependent, p);
}

} // namespace hone::cuda

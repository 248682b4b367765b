// rmsnorm kernels: the compiled kernels (vec x residual), the config list, resources and launch.
// Host logic: rmsnorm_config.cpp; device code and summation order: rmsnorm.cuh.
//
// Tactic fields (`rmsnorm.bf16:vec=..,threads=..,rows_per_cta=..`):
//   vec           bf16 per vector load (8: 16 bytes, 4: 8 bytes); with threads, the summation
//                 order (threads x vec partial sums)
//   threads       threads per row, a power of two
//   rows_per_cta  rows of one CTA (CTA size threads x rows_per_cta, 64 .. 512)
#include "cuda/kernels/rmsnorm/rmsnorm.h"

#include <bit>

#include <cuda_runtime.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/rmsnorm/rmsnorm.cuh"

namespace hone::cuda {

namespace {

using rmsnorm_detail::Params;
using KernelFn = void (*)(Params);

KernelFn kernel_of(int vec, bool residual) {
  if (vec == 8)
    return residual ? &rmsnorm_detail::rmsnorm_kernel<8, true>
                    : &rmsnorm_detail::rmsnorm_kernel<8, false>;
  if (vec == 4)
    return residual ? &rmsnorm_detail::rmsnorm_kernel<4, true>
                    : &rmsnorm_detail::rmsnorm_kernel<4, false>;
  return nullptr;
}

} // namespace

const std::vector<RmsnormConfig> &rmsnorm_configs() {
  static const std::vector<RmsnormConfig> configs = [] {
    std::vector<RmsnormConfig> out;
    for (int vec : {8, 4})
      for (int threads = 16; threads <= kRmsnormMaxThreadsPerCta; threads *= 2)
        for (int rows = 1; rows <= 8; rows *= 2)
          if (threads * rows >= 64 && threads * rows <= kRmsnormMaxThreadsPerCta)
            out.push_back({vec, threads, rows});
    return out;
  }();
  return configs;
}

KernelResources rmsnorm_resources(const RmsnormConfig &config, bool residual) {
  const KernelFn fn = kernel_of(config.vec, residual);
  return fn ? kernel_detail::resources_of(fn) : KernelResources{};
}

LaunchStatus rmsnorm_launch(const RmsnormConfig &config, const RmsnormArgs &args, void *stream) {
  const KernelFn fn = kernel_of(config.vec, args.residual != nullptr);
  const int cta = config.threads * config.rows_per_cta;
  if (!fn || args.rows < 1 || args.hidden < config.vec || args.hidden % config.vec != 0 ||
      !std::has_single_bit(static_cast<unsigned>(config.threads)) ||
      !std::has_single_bit(static_cast<unsigned>(config.rows_per_cta)) || cta < 32 ||
      cta > kRmsnormMaxThreadsPerCta ||
      (args.hidden / config.vec + config.threads - 1) / config.threads > kRmsnormMaxChunks ||
      (args.residual && !args.residual_out) || !args.x || !args.w || !args.out)
    return LaunchStatus::invalid_value();
  Params p{};
  p.x = static_cast<const uint16_t *>(args.x);
  p.residual = static_cast<const uint16_t *>(args.residual);
  p.residual_out = static_cast<uint16_t *>(args.residual_out);
  p.w = static_cast<const uint16_t *>(args.w);
  p.out = static_cast<uint16_t *>(args.out);
  p.rows = args.rows;
  p.hidden = args.hidden;
  const auto stride = [&](int64_t s) { return s > 0 ? s : static_cast<int64_t>(args.hidden); };
  p.x_stride = stride(args.x_stride);
  p.residual_stride = stride(args.residual_stride);
  p.residual_out_stride = stride(args.residual_out_stride);
  p.out_stride = stride(args.out_stride);
  for (int64_t s : {p.x_stride, p.residual_stride, p.residual_out_stride, p.out_stride})
    if (s % config.vec != 0)
      return LaunchStatus::invalid_value();
  p.eps = args.eps;
  p.threads_log2 = std::countr_zero(static_cast<unsigned>(config.threads));
  p.trigger_early = args.dependent && chain_early_trigger() ? 1 : 0;
  const unsigned grid =
      static_cast<unsigned>((args.rows + config.rows_per_cta - 1) / config.rows_per_cta);
  return kernel_detail::launch_maybe_dependent(fn, dim3(grid), dim3(cta), 0, stream, args.dependent,
                                               p);
}

} // namespace hone::cuda

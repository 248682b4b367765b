#include "cuda/kernels/common/weight_stream.h"

#include <algorithm>

#include <cuda_runtime.h>

#include "cuda/kernels/common/chain_settings.h"

namespace hone::cuda {

int persistent_ctas(const void *kernel, int threads, size_t shared_bytes, int tiles,
                    int ctas_per_sm) {
  int device = 0, sms = 0, resident = 0;
  if (shared_bytes > shared_memory_opt_in(kernel))
    return 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads, shared_bytes) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  resident = std::min(resident, std::max(1, ctas_per_sm));
  if (resident < 1)
    return 0;
  return std::max(1, std::min(tiles, sms * resident));
}

LaunchStatus launch_persistent(const void *kernel, int ctas, int threads, size_t shared_bytes,
                               void *params, void *stream, bool dependent) {
  if (ctas < 1 || threads < 1)
    return LaunchStatus::invalid_value();
  if (shared_bytes > shared_memory_opt_in(kernel))
    return LaunchStatus::invalid_configuration();
  cudaLaunchConfig_t launch{};
  launch.gridDim = dim3(static_cast<unsigned>(ctas));
  launch.blockDim = dim3(static_cast<unsigned>(threads));
  launch.dynamicSmemBytes = shared_bytes;
  launch.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attributes[2]{};
  if (dependent && pdl_supported()) {
    attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[0].val.programmaticStreamSerializationAllowed = 1;
    launch.attrs = attributes;
    launch.numAttrs = add_chain_carveout(attributes, 1);
  }
  void *args[] = {params};
  const cudaError_t status = cudaLaunchKernelExC(&launch, kernel, args);
  if (status != cudaSuccess)
    return LaunchStatus::from_cuda(static_cast<int>(status));
  return LaunchStatus::from_cuda(static_cast<int>(cudaGetLastError()));
}

StreamShape stream_shape(const void *x, void *y, int rows, int n, int k, int row_bytes,
                         int tile_rows, const SplitKCta &cta, const StreamRingFields &ring) {
  StreamShape s;
  s.x = static_cast<const uint16_t *>(x);
  s.y = static_cast<uint16_t *>(y);
  s.rows = rows;
  s.n = n;
  s.k = k;
  s.consumer_warps = cta.warps_k;
  const int step_bytes = cta.warps_k * kStreamStepBytes;
  s.steps = (row_bytes + step_bytes - 1) / step_bytes;
  s.tiles = (n + tile_rows - 1) / tile_rows;
  s.stages = ring.stages;
  return s;
}

bool stream_launch_fits(const SplitKCta &cta, const StreamRingFields &ring, int rows, int chunks) {
  return rows >= 1 && rows <= cta.rows_per_cta && cta.warps_k >= 1 && cta.warps_k <= 8 &&
         cta.warps == cta.warps_k && cta.split_k == 1 && cta.warps_k <= chunks &&
         ring.stages >= 2 && ring.stages <= 16;
}

LaunchStatus launch_stream_kernel(const void *fn, int consumers, size_t shared_bytes, int tiles,
                                  int ctas_per_sm, void *params, void *stream, bool dependent) {
  const int threads = (consumers + 1) * 32;
  const int ctas = persistent_ctas(fn, threads, shared_bytes, tiles, ctas_per_sm);
  if (ctas < 1)
    return LaunchStatus::invalid_configuration();
  return launch_persistent(fn, ctas, threads, shared_bytes, params, stream, dependent);
}

} // namespace hone::cuda

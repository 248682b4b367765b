#include "cuda/kernels/common/split_k_launch.h"

#include <cuda_runtime.h>

#include "cuda/kernels/common/chain_settings.h"
#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda {

namespace {
// The grid's extent along x (output tiles) and z (row groups); y is split_k.
int grid_tiles(const SplitKGrid &grid) {
  return (grid.n + grid.outputs_per_cta - 1) / grid.outputs_per_cta;
}
int grid_row_groups(const SplitKGrid &grid) {
  return (grid.rows + grid.rows_per_cta - 1) / grid.rows_per_cta;
}
} // namespace

long long split_k_grid_ctas(const SplitKGrid &grid) {
  return static_cast<long long>(grid_tiles(grid)) * grid.split_k * grid_row_groups(grid);
}

int launch_split_k(const SplitKGrid &grid, size_t shared_bytes, const void *kernel, void *params,
                   void *stream, bool dependent) {
  cudaLaunchConfig_t launch{};
  launch.gridDim =
      dim3(static_cast<unsigned>(grid_tiles(grid)), static_cast<unsigned>(grid.split_k),
           static_cast<unsigned>(grid_row_groups(grid)));
  launch.blockDim = dim3(static_cast<unsigned>(grid.threads));
  launch.dynamicSmemBytes = shared_bytes;
  launch.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attributes[3]{};
  unsigned count = 0;
  if (grid.split_k > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = 1;
    attributes[count].val.clusterDim.y = static_cast<unsigned>(grid.split_k);
    attributes[count].val.clusterDim.z = 1;
    ++count;
  }
  if (dependent && pdl_supported()) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    ++count;
    count = add_chain_carveout(attributes, count);
  }
  launch.attrs = count > 0 ? attributes : nullptr;
  launch.numAttrs = count;
  // What the cudaLaunchKernelEx template does with its arguments: one pointer per parameter.
  void *args[] = {params};
  const cudaError_t status = cudaLaunchKernelExC(&launch, kernel, args);
  if (status != cudaSuccess)
    return static_cast<int>(status);
  return static_cast<int>(cudaGetLastError());
}

} // namespace hone::cuda

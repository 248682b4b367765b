// Tiled transpose of the affine group parameters (see group_params_transpose.h): a CTA of
// 32 x 8 threads moves one 32 x 32 tile of one of the two arrays through shared memory, so
// both the reads (along groups) and the writes (along n) are coalesced.
#include "cuda/kernels/qmm_affine/group_params_transpose.h"

#include <cstdint>

#include <cuda_runtime.h>

namespace hone::cuda {

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;
constexpr int kThreads = kTile * kRowsPerPass;
constexpr int kMaxGroupTiles = 65535; // gridDim.y

// grid: x over n tiles, y over group tiles, z = 0 (scales) or 1 (biases).
__global__ void __launch_bounds__(kThreads)
    transpose_group_params_kernel(const uint16_t *__restrict__ scales,
                                  const uint16_t *__restrict__ biases,
                                  uint16_t *__restrict__ scales_t, uint16_t *__restrict__ biases_t,
                                  int n, int groups) {
  __shared__ uint16_t tile[kTile][kTile + 1]; // +1: no bank conflicts on the transposed read
  const uint16_t *src = blockIdx.z == 0 ? scales : biases;
  uint16_t *dst = blockIdx.z == 0 ? scales_t : biases_t;
  const int j0 = static_cast<int>(blockIdx.x) * kTile; // along n
  const int g0 = static_cast<int>(blockIdx.y) * kTile; // along groups
  for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
    const int j = j0 + r, g = g0 + static_cast<int>(threadIdx.x);
    if (j < n && g < groups)
      tile[r][threadIdx.x] = src[static_cast<size_t>(j) * groups + g];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
    const int g = g0 + r, j = j0 + static_cast<int>(threadIdx.x);
    if (j < n && g < groups)
      dst[static_cast<size_t>(g) * n + j] = tile[threadIdx.x][r];
  }
}

} // namespace

int transpose_group_params(const void *scales, const void *biases, void *scales_t, void *biases_t,
                           int n, int groups, void *stream) {
  if (n < 1 || groups < 1 || (groups + kTile - 1) / kTile > kMaxGroupTiles)
    return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid((n + kTile - 1) / kTile, (groups + kTile - 1) / kTile, 2);
  const dim3 block(kTile, kRowsPerPass);
  transpose_group_params_kernel<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint16_t *>(scales), static_cast<const uint16_t *>(biases),
      static_cast<uint16_t *>(scales_t), static_cast<uint16_t *>(biases_t), n, groups);
  return static_cast<int>(cudaGetLastError());
}

} // namespace hone::cuda

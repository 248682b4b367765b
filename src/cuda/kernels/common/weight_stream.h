// Host side of the GEMV-family "stream" kernels (weight_stream.cuh): the persistent grid (one
// CTA per SM and resident slot, each owning a balanced, contiguous range of weight-row tiles)
// and its launch. No CUDA header needed by includers.
//
//   const int ctas = persistent_ctas(fn, threads, shared_bytes, tiles, config.ctas_per_sm);
//   return launch_persistent(fn, ctas, threads, shared_bytes, &params, stream);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "cuda/kernels/common/split_k_family.h"

#if defined(__CUDACC__)
#define HONE_WEIGHT_STREAM_FN __host__ __device__ __forceinline__
#else
#define HONE_WEIGHT_STREAM_FN inline
#endif

namespace hone::cuda {

// [bytes] the largest dynamic shared memory a stream config may ask for (sm_90 opt-in is
// 227 KB; the rest is static shared memory and the driver's reserve).
inline constexpr size_t kStreamMaxSharedBytes = 220 * 1024;
// [bytes] of one weight row a consumer takes per ring step.
inline constexpr int kStreamStepBytes = 256;

// CTAs of the persistent grid for `tiles` work tiles: min(tiles, SMs x resident), resident =
// min(ctas_per_sm, what the occupancy calculator allows `kernel` with `threads` threads and
// `shared_bytes` of dynamic shared memory), so that the grid is one wave. 0 when the device
// cannot be queried or not one CTA fits.
int persistent_ctas(const void *kernel, int threads, size_t shared_bytes, int tiles,
                    int ctas_per_sm);

// The first weight-row tile of CTA `cta` of `ctas` over `tiles` (CTA c owns
// [stream_first_tile(c), stream_first_tile(c + 1))): contiguous, sizes differ by at most one.
// The stream kernels' persistent grid and read_ceiling's tma pattern (over 16-row units).
HONE_WEIGHT_STREAM_FN int stream_first_tile(int cta, int ctas, int tiles) {
  return static_cast<int>(static_cast<long long>(cta) * tiles / ctas);
}

// Enqueues `kernel` (a __global__ function whose one parameter is the struct at `params`) on
// `stream` with `ctas` CTAs of `threads` threads and `shared_bytes` of dynamic shared memory,
// raising the kernel's shared-memory limit to the device's opt-in limit at its first launch.
// cudaErrorInvalidConfiguration when `shared_bytes` exceeds that limit. Never synchronises.
// `dependent`: a programmatic dependent launch where the device has it (the kernel waits with
// griddepcontrol.wait before it reads what the kernel before it on the stream writes).
LaunchStatus launch_persistent(const void *kernel, int ctas, int threads, size_t shared_bytes,
                               void *params, void *stream, bool dependent = false);

// What every stream kernel's parameters start with: the activations and output, the problem,
// and the ring's geometry (the kernel's own weight pointers follow in its parameter struct).
struct StreamShape {
  const uint16_t *x = nullptr; // bf16 [rows, k]
  uint16_t *y = nullptr;       // bf16 [rows, n]
  int rows = 0, n = 0, k = 0;
  int consumer_warps = 0; // W = k_slices
  int steps = 0;          // ring steps per tile: ceil(row_bytes / (W kStreamStepBytes))
  int tiles = 0;          // ceil(n / tile_rows)
  int stages = 0;         // ring depth, <= 16
};

// The StreamShape of a launch: `row_bytes` of weights per row, tiles of `tile_rows` rows.
StreamShape stream_shape(const void *x, void *y, int rows, int n, int k, int row_bytes,
                         int tile_rows, const SplitKCta &cta, const StreamRingFields &ring);

// Whether a stream config can launch `rows` activation rows over `chunks` K chunks: consumer
// warps = warps = warps_k in 1..min(8, chunks), split_k 1, rows <= rows_per_cta, ring depth
// 2..16.
bool stream_launch_fits(const SplitKCta &cta, const StreamRingFields &ring, int rows, int chunks);

// Enqueues the stream kernel `fn` (parameter struct at `params`): `consumers` consumer warps and
// the producer warp per CTA, `shared_bytes` of dynamic shared memory, one persistent wave over
// `tiles` weight-row tiles at up to `ctas_per_sm` CTAs per SM (persistent_ctas). `dependent`:
// a programmatic dependent launch where the device has it. cudaErrorInvalidConfiguration when
// not one CTA fits. Never synchronises.
LaunchStatus launch_stream_kernel(const void *fn, int consumers, size_t shared_bytes, int tiles,
                                  int ctas_per_sm, void *params, void *stream, bool dependent);

// Appends one stream config per point of the stream path's tactic axes -- consumer warps (= K
// slices) 1/2/4/8, ring depth 4/8, CTAs per SM 1/2 -- whose shared memory x ctas_per_sm fits
// kStreamMaxSharedBytes: `base` (its kernel's fields set: rows_per_cta, outputs_per_warp, ...)
// with the path and those fields. `shared_bytes(config)`: a config's dynamic shared memory.
template <class Config, class SharedBytes>
void append_stream_configs(const Config &base, SharedBytes shared_bytes, std::vector<Config> &out) {
  for (int consumers : {1, 2, 4, 8})
    for (int stages : {4, 8})
      for (int per_sm : {1, 2}) {
        Config c = base;
        c.path = KernelPath::stream;
        c.warps = consumers;
        c.warps_k = consumers;
        c.split_k = 1;
        c.async = 0;
        c.stages = stages;
        c.ctas_per_sm = per_sm;
        if (shared_bytes(c) * static_cast<size_t>(per_sm) <= kStreamMaxSharedBytes)
          out.push_back(c);
      }
}

} // namespace hone::cuda

// Host side of one launch of the split-K GEMV-family kernels (gemv_bf16, qmv_affine): grid,
// block and thread-block cluster. CTAs tile the outputs along x and the activation rows along
// z; the split_k CTAs of one tile lie along y and, when split_k > 1, form one cluster, across
// which split_k_reduce.cuh adds the K slices in order. No CUDA header needed by includers.
//
//   SplitKGrid grid{args.n, args.rows, warps_n * outputs_per_warp, rows_per_cta, split_k, 128};
//   return launch_split_k(grid, smem, reinterpret_cast<const void *>(fn), &params, stream);
#pragma once

#include <cstddef>

namespace hone::cuda {

struct SplitKGrid {
  int n = 0;               // outputs per row
  int rows = 0;            // activation rows
  int outputs_per_cta = 0; // along n: warps_n x outputs_per_warp
  int rows_per_cta = 0;    // along rows
  int split_k = 1;         // CTAs of one tile along y; one cluster when > 1
  int threads = 0;         // per CTA
};

// The CTAs a launch of `grid` makes (tiles x row groups x split_k).
long long split_k_grid_ctas(const SplitKGrid &grid);

// Enqueues `kernel` (a __global__ function whose one parameter is the struct at `params`) on
// `stream` (a cudaStream_t) with `shared_bytes` of dynamic shared memory. Returns the
// cudaError_t of the launch, else of cudaGetLastError() after it, as int (0 = ok); never
// synchronises. `dependent`: a programmatic dependent launch where the device has it (the
// kernel waits with griddepcontrol.wait before it reads what the kernel before it writes).
int launch_split_k(const SplitKGrid &grid, size_t shared_bytes, const void *kernel, void *params,
                   void *stream, bool dependent = false);

} // namespace hone::cuda

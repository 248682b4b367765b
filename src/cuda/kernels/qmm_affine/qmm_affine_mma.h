// qmm.affine's mma path (mma.sync, no CUTLASS): the compiled kernels and their launch, for the
// activation tiles of decode-to-prefill. qmm_affine.cpp lists them as configs of path 2
// (`qmm.affine.mma:tile_m=..,tile_n=..,tile_k=..,stages=..,warps=..,split_k=..`). No CUDA header needed
// by includers. Device code and the fragment layout: qmm_affine_mma.cuh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda {

// One compiled mma kernel: tile_m activation rows x tile_n weight rows per CTA, `warps` warps
// (each tile_n / warps weight rows), a `stages`-deep cp.async ring of tile_k-deep K blocks
// (64 or 128; k must be a multiple of it).
struct QmmMmaKernel {
  int tile_m, tile_n, tile_k, warps, stages;
};

// Every compiled mma kernel (int4 only), in table order.
const std::vector<QmmMmaKernel> &qmm_mma_kernels();
inline constexpr int kQmmMmaMaxSplit = 8; // split_k CTAs form one cluster (portable size)

struct QmmMmaArgs {
  const void *x = nullptr;      // bf16 [m, k]
  const uint32_t *q = nullptr;  // int4 words [n, k / 8]
  const void *scales = nullptr; // bf16 [n, k / group]
  const void *biases = nullptr; // bf16 [n, k / group]
  void *y = nullptr;            // bf16 [m, n]
  int m = 0, n = 0, k = 0, group = 64;
  int split_k = 1;
  bool dependent = false; // a programmatic dependent launch (waits before reading X)
};

// Registers, spills and shared memory of a kernel; empty when it is not compiled.
KernelResources qmm_mma_resources(const QmmMmaKernel &kernel);
// Enqueues the kernel; invalid_value when `kernel` is not compiled or refuses the arguments
// (m, n % 8, k % tile_k, the group, k / group even, split_k in 1..8 and at most the K
// blocks).
LaunchStatus qmm_mma_launch(const QmmMmaKernel &kernel, const QmmMmaArgs &args, void *stream);

} // namespace hone::cuda

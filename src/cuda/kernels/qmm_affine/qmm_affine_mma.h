// qmm.affine's mma path (mma.sync, no CUTLASS): the compiled kernels and their launch, for the
// activation tiles of decode-to-prefill. qmm_affine.cpp lists them as configs of path 2
// (`qmm.affine.mma:tile_m=..,tile_n=..,stages=..,warps=..,split_k=..`). No CUDA header needed
// by includers. Device code and the fragment layout: qmm_affine_mma.cuh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda {

// One compiled mma kernel: TM activation rows x BN weight rows per CTA, `warps` warps (each
// BN / warps weight rows), a `stages`-deep cp.async ring of 64-deep K blocks.
struct QmmMmaKernel {
  int tile_m, tile_n, warps, stages;
};

// Every compiled mma kernel (int4 only), in table order.
const std::vector<QmmMmaKernel> &qmm_mma_kernels();
inline constexpr int kQmmMmaBlockK = 64;  // K per stage: k must be a multiple of it
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
// (m, n % 8, k % 64, the group, split_k in 1..8 and at most the K blocks).
LaunchStatus qmm_mma_launch(const QmmMmaKernel &kernel, const QmmMmaArgs &args, void *stream);

} // namespace hone::cuda

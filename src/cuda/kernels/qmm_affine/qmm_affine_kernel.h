// One compiled qmm.affine kernel as the host sees it: what it fixes at compile time and four
// host functions, defined in its own generated translation unit (qmm_affine_instance.cu.in)
// so that the CUTLASS instantiations compile in parallel. No CUDA header needed by includers.
//
//   const QmmAffineKernel &k = ...;              // a row of the table (qmm_affine.cpp)
//   if (k.can_implement(ka) == 0) k.run(ka, stream);
#pragma once

#include <cstddef>

#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda {

// One GEMM launch, in the transposed problem the kernels compute: Y^T[n, m] = W[n, k] . X^T.
struct QmmAffineKernelArgs {
  const void *x = nullptr; // bf16 [m, k]
  // packed weights [n, k * bits / 8 bytes]; bf16 [n, k] for a dense kernel (bits 16)
  const void *q = nullptr;
  // bf16 [k / group, n]: the scales and biases transposed (N fastest); dense kernels read none
  const void *scales_t = nullptr;
  const void *biases_t = nullptr;
  void *y = nullptr; // bf16 [m, ldy]: columns 0..n-1 written
  int m = 0, n = 0, k = 0, group = 0;
  int ldy = 0;               // [elements] row stride of Y; 0: n
  int split_k = 1;           // 1: one CTA per tile; > 1: split-K into that many slices
  int stream_k = 0;          // 1: stream-K
  int sm_count = 0;          // of the current device: bounds the persistent grid
  void *workspace = nullptr; // REQUIRES: workspace_bytes(args) bytes, 16-byte aligned
};

struct QmmAffineKernel {
  // What the kernel fixes (QmmAffineConfig's kernel part).
  int bits; // 4, 8: mixed input (path wgmma); 16: dense bf16 (path dequant, any bits)
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  int pingpong;
  int stages;       // pipeline stages the collective builder fitted in shared memory
  const char *name; // generated, e.g. qmm_affine_w4_t128x64x64_c1x1_coop_sm90a
  // [bytes] of kernel workspace (partials of split-K / stream-K).
  size_t (*workspace_bytes)(const QmmAffineKernelArgs &args);
  // 0 when the kernel accepts the arguments, else the cutlass::Status value.
  int (*can_implement)(const QmmAffineKernelArgs &args);
  // Enqueues the workspace initialisation and the kernel; a cudaError_t as int.
  int (*run)(const QmmAffineKernelArgs &args, void *stream);
  // cudaFuncGetAttributes of the kernel plus its dynamic shared memory; a cudaError_t as int.
  int (*resources)(KernelResources *out);
};

} // namespace hone::cuda

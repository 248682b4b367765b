// qmm.affine's mma path (mma.sync, no CUTLASS): the compiled kernels and their launch, for the
// activation tiles of decode-to-prefill. qmm_affine.cpp lists them as configs of path 2
// (`qmm.affine.mma:tile_m=..,tile_n=..,tile_k=..,stages=..,warps=..,split_k=..`). No CUDA header
// needed by includers. Device code and the fragment layout: qmm_affine_mma.cuh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"

namespace hone::cuda {

// One compiled mma kernel: tile_m activation rows x tile_n weight rows per CTA, a
// `stages`-deep cp.async ring of tile_k-deep K blocks (64, 128 or 256), `warps` warps: tile_k /
// 64 of them along K (64 K each per block), the rest along the weight rows.
struct QmmMmaKernel {
  int tile_m, tile_n, tile_k, warps, stages;
  int engine = 0; // kQmmEngineMma (mma.sync), kQmmEngineWgmma(Late), kQmmEngineTma(Ahead)
  friend bool operator==(const QmmMmaKernel &, const QmmMmaKernel &) = default;
};
inline constexpr int kQmmEngineMma = 0;
inline constexpr int kQmmEngineWgmma = 1; // register-A wgmma, every thread copies (cp.async)
inline constexpr int kQmmEngineTma = 2;   // register-A wgmma, one producer warp copies (TMA)
// The TMA engine with step s + 1's loads and integer dequantisation issued before the wait for
// the wgmma of step s - 1 (qmm_affine_tma.cuh, AHEAD).
inline constexpr int kQmmEngineTmaAhead = 3;
// The register-A engine refilling a stage one block later, without draining its wgmma at every
// block (qmm_affine_wgmma_rs.cuh, LATE).
inline constexpr int kQmmEngineWgmmaLate = 4;
constexpr bool qmm_engine_is_tma(int engine) {
  return engine == kQmmEngineTma || engine == kQmmEngineTmaAhead;
}
// A TMA kernel's warpgroups along K (qmm_affine_tma.cuh, WGK): its consumer warps over the 4 a
// 64-row weight tile. Those with more than one have no stream-K form.
constexpr int qmm_tma_warpgroups_k(const QmmMmaKernel &k) { return (k.warps - 1) * 16 / k.tile_n; }

// Every compiled mma kernel (int4 only), in table order: the mma.sync ones, then (sm_90a, where
// HONE_QMM_WGMMA_RS is defined: qmm_affine_wgmma_rs.cu) the register-A wgmma ones of both wgmma
// engines.
const std::vector<QmmMmaKernel> &qmm_mma_kernels();
#ifdef HONE_QMM_WGMMA_RS
// The wgmma engines' kernels, resources and launch (qmm_affine_wgmma_rs.cu); the mma path's
// functions below dispatch to them on kernel.engine.
const std::vector<QmmMmaKernel> &qmm_rs_kernels();
#endif
inline constexpr int kQmmMmaWarpK = 64;   // K per warp per block: tile_k is a multiple of it
inline constexpr int kQmmMmaMaxSplit = 8; // split_k CTAs form one cluster (portable size)

// Bytes of the aligned window of each row's scales (and biases) that a block copies: 16 where
// k / group is a multiple of 8, else 8 (of 4), else 4 (even); 0 when k / group is odd. A
// kernel serves the shape only if one block's tile_k / group groups fit in half that many.
constexpr int qmm_mma_param_bytes(int k, int group) {
  const int groups = group > 0 ? k / group : 1;
  return groups % 8 == 0 ? 16 : groups % 4 == 0 ? 8 : groups % 2 == 0 ? 4 : 0;
}
constexpr bool qmm_mma_params_fit(int tile_k, int k, int group) {
  const int bytes = qmm_mma_param_bytes(k, group);
  return bytes > 0 && (tile_k <= group || tile_k / group <= bytes / 2);
}

struct QmmMmaArgs {
  const void *x = nullptr;      // bf16 [m, k]
  const uint32_t *q = nullptr;  // int4 words [n, k / 8]
  const void *scales = nullptr; // bf16 [n, k / group]
  const void *biases = nullptr; // bf16 [n, k / group]
  void *y = nullptr;            // bf16 [m, n]
  int m = 0, n = 0, k = 0, group = 64;
  int split_k = 1;
  bool dependent = false; // a programmatic dependent launch (waits before reading X)
  // Stream-K (the TMA engine only; split_k 1): a persistent grid over all (tile, K block)
  // units, writers' partials and flags in `workspace` (256-byte aligned, at least
  // qmm_mma_workspace_bytes; it may hold anything, the kernel reads only what it wrote).
  bool stream_k = false;
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Registers, spills and shared memory of a kernel (its stream-K form where `stream_k`); empty
// when it is not compiled.
KernelResources qmm_mma_resources(const QmmMmaKernel &kernel, bool stream_k = false);
// [bytes] of workspace a launch needs: 0 but for stream-K, whose partials and flags depend on
// the current device's SM count (0 too where it cannot be read or the kernel has no stream-K).
size_t qmm_mma_workspace_bytes(const QmmMmaKernel &kernel, int m, int n, int k, bool stream_k);
// Enqueues the kernel; invalid_value when `kernel` is not compiled or refuses the arguments
// (m, n % 8, k % tile_k, the group and its parameter window, split_k in 1..8 and at most the K
// blocks; stream-K elsewhere than the TMA engine, with split_k > 1 or too small a workspace).
LaunchStatus qmm_mma_launch(const QmmMmaKernel &kernel, const QmmMmaArgs &args, void *stream);
#ifdef HONE_QMM_WGMMA_RS
KernelResources qmm_rs_resources(const QmmMmaKernel &kernel, bool stream_k);
size_t qmm_rs_workspace_bytes(const QmmMmaKernel &kernel, int m, int n, int k, bool stream_k);
LaunchStatus qmm_rs_launch(const QmmMmaKernel &kernel, const QmmMmaArgs &args, void *stream);
#endif

} // namespace hone::cuda

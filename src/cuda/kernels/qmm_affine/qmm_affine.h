// qmm.affine CUDA kernels: host-callable launch interface (no CUDA header needed by includers).
// Y[m, n] = sum_k X[m, k] * W[n, k] with W affine-quantized along K, in the layout of
// qmv.affine (one copy of the weights serves both):
//   W[n, k] = q[n, k] * scale[n, k / group] + bias[n, k / group]
// q: uint32 words [n, k * bits / 32], 32 / bits unsigned values per word along K, lowest bits
// first; scale, bias: bf16 [n, k / group]; X [m, k], Y [m, n]: bf16, row-major; fp32
// accumulation. m 1..16384, bits 4 or 8 (a template parameter), group 32, 64 or 128 (a run-time
// argument).
//
// The kernels are CUTLASS 3.x warp-specialised Hopper GEMMs (TMA loads, warpgroup MMA, sm_90a)
// on the transposed problem Y^T[n, m] = W[n, k] . X^T: the weights are the wgmma's M (64 rows
// per consumer warpgroup) and the activation rows its N (8..256). Two paths:
//   wgmma    the mixed-input mainloop dequantises each weight fragment in registers (the
//            narrow operand must be the register-sourced A, hence the transposition); tile K
//            64 or 128, dividing the group, so groups 64 and 128;
//   dequant  the weights are dequantised to bf16 scratch (at most 64 MiB at a time, a chunk of
//            weight rows), then a dense bf16 GEMM runs on each chunk; every group, 32 included.
// and one hand-written path for the small activation tiles of decode-to-prefill (int4):
//   mma      mma.sync with a cp.async ring of weights and activations, per-weight
//            dequantisation in registers, split-K across the CTAs of a cluster
//            (qmm_affine_mma.{h,cuh}); needs no CUTLASS.
//
//   QmmAffineConfig c = qmm_affine_default(m, n, k, bits, group);
//   args.workspace = workspace_for(stream, qmm_affine_workspace_bytes(c, m, n, k, group));
//   LaunchStatus s = qmm_affine_launch(c, args, stream);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One compiled kernel configuration of qmm.affine. Its Tactic form is
// `qmm.affine.<path>:tile_m=..,tile_n=..,tile_k=..,cluster_m=..,cluster_n=..,pingpong=..,
// split_k=..` plus `stream_k=1` where set, <path> wgmma or dequant; the mma path spells
// `qmm.affine.mma:tile_m=..,tile_n=..,tile_k=..,stages=..,warps=..,split_k=..` (no cluster
// field: its split_k CTAs form the cluster). Path, tile, cluster, schedule (stages and warps
// on the mma path) pick the compiled kernel; split_k and stream_k are run-time arguments of it.
// QmmAffineConfig::path of the mma path (0: wgmma, 1: dequant).
inline constexpr int kQmmMmaPath = 2;

struct QmmAffineConfig {
  int path = 0;      // 0: wgmma (mixed input), 1: dequant (bf16 scratch, dense GEMM), 2: mma
  int tile_m = 128;  // activation rows (M of Y) per output tile: the wgmma N
  int tile_n = 128;  // weight rows (N of Y) per output tile: 64 per consumer warpgroup
  int tile_k = 64;   // K per pipeline stage; must divide the group (wgmma path)
  int cluster_m = 1; // CTAs of one cluster along M: they share (TMA multicast) the weight tile
  int cluster_n = 1; // CTAs of one cluster along N: they share the activation tile
  int pingpong = 0;  // 0: cooperative (two consumer warpgroups split one tile); 1: ping-pong
                     // (each consumer warpgroup owns a tile; tile_n = 64)
  int split_k = 1;   // K slices of one tile, reduced in fixed order through the workspace
                     // (cooperative only)
  int stream_k = 0;  // 1: stream-K decomposition (cooperative only; split_k = 1)
  int stages = 0;    // mma path: cp.async ring depth (0 on the CUTLASS paths)
  int warps = 0;     // mma path: warps per CTA, tile_k / 64 of them along K
  int engine = 0;    // mma path: 0 mma.sync (qmm.affine.mma); wgmma with the dequantised
                     // weights as register A, 1 copied by every thread (qmm.affine.mma_wgmma),
                     // 2 by a producer warp's TMA (qmm.affine.mma_tma)
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a qmm.affine config.
  static QmmAffineConfig from_tactic(const Tactic &tactic);
  // The compiled kernel's part (tile, cluster, schedule), without the run-time split.
  bool same_kernel(const QmmAffineConfig &other) const;
  bool operator==(const QmmAffineConfig &) const = default;
};

struct QmmAffineArgs {
  const void *x = nullptr;      // bf16 [m, k]
  const uint32_t *q = nullptr;  // [n, k * bits / 32]
  const void *scales = nullptr; // bf16 [n, k / group]
  const void *biases = nullptr; // bf16 [n, k / group]
  void *y = nullptr;            // bf16 [m, n]
  int m = 0, n = 0, k = 0, bits = 4, group = 64;
  // Scratch: the group parameters transposed to [k / group, n] (the wgmma path reads scales
  // N-major) or the bf16 weights of one chunk (dequant path), then the split-K / stream-K
  // partials. See qmm_affine_workspace_bytes.
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
};

// [bytes] the dequant path's bf16 scratch holds at most: W is dequantised in chunks of rows.
inline constexpr size_t kQmmDequantChunkBytes = size_t{64} << 20;

// Every config compiled into this build for `bits` (kernels x run-time splits): the candidate
// universe; filter with qmm_affine_can_implement. Empty when the build has no qmm kernels.
const std::vector<QmmAffineConfig> &qmm_affine_configs(int bits);
// True when this build compiled qmm kernels (CUTLASS headers found at configure time).
bool qmm_affine_built();
// The compiled tiles for `bits`, "MxNxK" each, for error messages.
std::string qmm_affine_tile_list(int bits);
// The static default for a shape; one of qmm_affine_configs(bits).
// REQUIRES: qmm_affine_built().
QmmAffineConfig qmm_affine_default(int m, int n, int k, int bits, int group);
// False with a reason when `config` cannot run this shape (shape rules, not compiled, tile K
// not dividing the group, split beyond the K tiles).
bool qmm_affine_can_implement(const QmmAffineConfig &config, int m, int n, int k, int bits,
                              int group, std::string *reason);
// [bytes] of workspace one launch of `config` needs: transposed scales and biases (wgmma) or
// one chunk of bf16 weights (dequant), plus the kernel's partials (split-K, stream-K).
size_t qmm_affine_workspace_bytes(const QmmAffineConfig &config, int m, int n, int k, int bits,
                                  int group);
// Registers, local memory (spills) and shared memory of the config's kernel.
KernelResources qmm_affine_resources(const QmmAffineConfig &config, int bits);
// Pipeline stages of the config's kernel (what the shared memory holds), 0 if not compiled.
int qmm_affine_stages(const QmmAffineConfig &config, int bits);
// Enqueues the group-parameter transpose and the GEMM (wgmma), or per chunk of weight rows
// the dequantisation and the GEMM (dequant), on `stream` (a cudaStream_t); never
// synchronises. invalid_value when the config is not compiled or refuses the arguments
// (including a workspace smaller than qmm_affine_workspace_bytes).
LaunchStatus qmm_affine_launch(const QmmAffineConfig &config, const QmmAffineArgs &args,
                               void *stream);

} // namespace hone::cuda

// gemv.bf16 kernels: host-callable launch interface (no CUDA header needed by includers).
// Y[r, n] = sum_k X[r, k] * W[n, k]; X [rows, k], W [n, k], Y [rows, n], row-major bf16,
// fp32 accumulation. rows 1..32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "cuda/kernels/common/split_k_family.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One compiled kernel configuration of gemv.bf16. Its Tactic form is
// `gemv.bf16.<path>:name=value,...`; the kernel-specific fields are documented in the .cu.
// The CTA and cluster fields (rows_per_cta, warps, warps_k, outputs_per_warp, split_k,
// async) are the family's (SplitKCta); outputs_per_warp is 16 or 32 on the mma path, 1..4 on
// the fma path. The stream path (weights once, persistent grid) reads them as: warps = warps_k
// = consumer warps = K slices (one producer warp more), outputs_per_warp = weight rows per
// tile (16 or 32), split_k = 1, async = 0; and adds stages and ctas_per_sm.
struct GemvBf16Config : SplitKCta, StreamRingFields {
  KernelPath path = KernelPath::fma; // fma: CUDA cores; mma: mma.sync, rows on the n dimension;
                                     // stream: weights once through a shared-memory ring;
                                     // ring: the mma path's arithmetic, weights once
  int vec = 16;                      // bytes per weight load
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a gemv.bf16 config.
  static GemvBf16Config from_tactic(const Tactic &tactic);
  bool operator==(const GemvBf16Config &) const = default;
};

struct GemvBf16Args {
  const void *x = nullptr; // bf16 [rows, k]
  const void *w = nullptr; // bf16 [n, k]
  void *y = nullptr;       // bf16 [rows, n]
  int rows = 0, n = 0, k = 0;
  void *workspace = nullptr; // split-K partials; see gemv_bf16_workspace_bytes
  size_t workspace_bytes = 0;
  // A link of a decode step: chain.dependent launches it as a programmatic dependent launch.
  // The fma and mma kernels wait for the kernel before at their entry; the stream kernel's
  // producer loads weights first and its consumers wait before they read x.
  ChainLink chain;
  // > 0: the gate/up linear of an MLP with SiLU x up in its epilogue. W is [gate; up] (n = 2
  // silu_inter rows) and y is bf16 [rows, silu_inter], y = silu(gate) x up with the bits of this
  // linear's bf16 output followed by silu_mul. mma path only (gemv_bf16_silu_epilogue_fits);
  // silu_inter a multiple of 8.
  int silu_inter = 0;
};

// Every config compiled in (the candidate universe); filter with gemv_bf16_can_implement.
const std::vector<GemvBf16Config> &gemv_bf16_configs();
// The static default for a shape (also the batch-invariant reference order).
GemvBf16Config gemv_bf16_default(int rows, int n, int k);
// The stream path's candidate for the default (weights once at every row count; its K order,
// k_slices consumer warps, depends on k alone). gemv_bf16_default returns it only when
// kGemvBf16DefaultIsStream (gemv_bf16_config.cpp) is set, which waits for the H200 sweep.
GemvBf16Config gemv_bf16_stream_default(int rows, int n, int k);
// The ring path's default (weights once, the mma default's K order and so its bits):
// gemv_bf16_default returns it where it can run once kGemvBf16DefaultIsRing
// (gemv_bf16_config.cpp) is set. A config of 16 K slices at more than 16 rows is not compiled:
// check it with gemv_bf16_can_implement.
GemvBf16Config gemv_bf16_ring_default(int rows, int n, int k);
// The ring config that computes `config`'s bits at this shape: `config` itself on the ring
// path; for an mma config, the ring default's shape at its k_slices (the same K order); none
// for the other paths or where that ring config cannot take the shape.
std::optional<GemvBf16Config> gemv_bf16_ring_twin(const GemvBf16Config &config, int rows, int n,
                                                  int k);
// False with a reason when `config` cannot run this shape (alignment, rows, K multiple).
bool gemv_bf16_can_implement(const GemvBf16Config &config, int rows, int n, int k,
                             std::string *reason);
size_t gemv_bf16_workspace_bytes(const GemvBf16Config &config, int rows, int n, int k);
// Registers per thread and local-memory bytes of the config's kernel (cudaFuncGetAttributes).
KernelResources gemv_bf16_resources(const GemvBf16Config &config);
// Whether `config` can run the gate/up linear of `inter` outputs a half with the SiLU epilogue
// (GemvBf16Args::silu_inter): the mma path, inter a multiple of 8.
bool gemv_bf16_silu_epilogue_fits(const GemvBf16Config &config, int inter);
// Enqueues one launch on `stream` (a cudaStream_t); never synchronises.
LaunchStatus gemv_bf16_launch(const GemvBf16Config &config, const GemvBf16Args &args, void *stream);

} // namespace hone::cuda

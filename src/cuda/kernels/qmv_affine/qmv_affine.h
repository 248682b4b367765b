// qmv.affine CUDA kernels: host-callable launch interface (no CUDA header needed by includers).
// Y[r, n] = sum_k X[r, k] * W[n, k] with W affine-quantized along K:
//   W[n, k] = q[n, k] * scale[n, k / group] + bias[n, k / group]
// q: uint32 words [n, k * bits / 32], 32 / bits values per word along K, lowest bits first;
// scale, bias: bf16 [n, k / group]; X [rows, k], Y [rows, n]: bf16, row-major; fp32
// accumulation. rows 1..32, bits 4 or 8, group 32, 64 or 128.
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

// One compiled kernel configuration of qmv.affine. Its Tactic form is
// `qmv.affine.mma:rows_per_cta=..,warps=..,warps_k=..,outputs_per_warp=..,split_k=..`
// plus `async=1`, then `ahead=J`, then `deep=2`, then `shallow=C` where set
// (the kernel-specific fields are documented in qmv_affine.cu).
// The CTA and cluster fields are the family's (SplitKCta): rows_per_cta 8, 16 or 32;
// outputs_per_warp 16 or 32; async: the cp.async ring for the packed words (same order).
// The stream path (`qmv.affine.stream:...`, weights once, persistent grid) reads the fields as:
// warps = warps_k = consumer warps = K slices (one producer warp more), outputs_per_warp 16
// (weight rows per tile), split_k 1, async 0; rows <= rows_per_cta; and adds stages and
// ctas_per_sm.
// The grouped path (`qmv.affine.grouped:...`, 4 bits, K a multiple of 128) has the mma path's
// fields; rows_per_cta is 4 or 8 (x 128 / group mma columns, at most two n8 tiles), async 0.
// The ring path (`qmv.affine.ring:...`, weights once in the mma path's K order) has the stream
// path's fields, read as in qmv_affine_ring.h.
struct QmvAffineConfig : SplitKCta, StreamRingFields {
  // The mma path's chunks of weights in flight per warp (the register pipeline's J) where a
  // kernel of that depth is compiled beside the slot's own; 0: the slot's own. The same K order
  // and bits at every value.
  int ahead = 0;
  // 2: the register pipeline holds two blocks of words ahead (the staged parameters' DEEP twin in
  // qmv_affine.cuh), 0: one. The mma path's int4 g64 per-weight kernel of 8-row CTAs at one m16
  // tile and ahead=2 only, on slices of kQmvAffineDeepMinChunks chunks or more; such a launch
  // stages its group parameters in shared memory wherever it can (the launch rule does not
  // apply). The same K order and bits as deep=0.
  int deep = 0;
  // C (2 or 4): the shallow kernel (qmv_affine.cuh): a warp's whole K slice of at most C chunks
  // in registers at once, no pipeline, at most 64 registers (C 2) or 128 (C 4). int4 per weight
  // or one group a chunk, 8-row CTAs of one m16 tile a warp (outputs_per_warp 16) or of its
  // lower half (8: twice the warps on a small matrix), rows 1-8, slices of 1-2 chunks
  // (C 2) or 3-4 (C 4); 0: the slot's own kernel. The same K order and bits as the mma configs of
  // its k_slices.
  int shallow = 0;
  KernelPath path = KernelPath::mma; // mma: mma.sync on weights dequantised in registers;
                                     // stream: the packed words once through a shared ring;
                                     // grouped: exact-integer mma, one column per group;
                                     // ring: the mma path's arithmetic, weights once
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a qmv.affine config.
  static QmvAffineConfig from_tactic(const Tactic &tactic);
  bool operator==(const QmvAffineConfig &) const = default;
};

// The rmsnorm that follows the linear, done by the linear's last CTA (the NORM twin,
// qmv_affine.cuh): out = rmsnorm(y (+ residual)) x w in the summation order of `lanes` partials
// (the rmsnorm config the separate launch would run, RmsnormConfig::lanes), so out and
// residual_out hold that launch's bits. y's hidden is n.
struct QmvAffineNorm {
  const void *residual = nullptr; // bf16 [rows, n] or null
  void *residual_out = nullptr;   // bf16 [rows, n] with residual (may be residual itself)
  const void *w = nullptr;        // bf16 [n]
  void *out = nullptr;            // bf16 [rows, n]; null: no norm
  unsigned *counter = nullptr;    // device, 0 before the launch; 0 again after it
  int lanes = 0;
  float eps = 0.f;
};

struct QmvAffineArgs {
  const void *x = nullptr;      // bf16 [rows, k]
  const uint32_t *q = nullptr;  // [n, k * bits / 32]
  const void *scales = nullptr; // bf16 [n, k / group]
  const void *biases = nullptr; // bf16 [n, k / group]
  void *y = nullptr;            // bf16 [rows, n]
  int rows = 0, n = 0, k = 0, bits = 4, group = 64;
  ChainLink chain; // a link of a decode step: a dependent launch
  // The mma and ring paths' dequantisation (qmv_affine_chunk_groups): -1, the shape's; 0-2, that
  // one where the shape allows it (else the launch is refused). Tests of a form that is not yet
  // the default set it; every other caller leaves it.
  int chunk_groups = -1;
  // > 0: the gate/up linear of an MLP with SiLU x up in its epilogue (GemvBf16Args::silu_inter:
  // W is [gate; up], n = 2 silu_inter, y bf16 [rows, silu_inter]); qmv_affine_silu_epilogue_fits
  // says which configs have it.
  int silu_inter = 0;
  // The group parameters staged in shared memory (the twins of the J 2 parameter-vector kernels
  // and of the cp.async ring's int4 kernels; same bits either way): -1, where the launch's rule
  // says it pays (qmv_affine_stages_parameters); 0, never; 1, wherever the kernel can. Tests and
  // A/B timings set it; every other caller leaves it.
  int stage_parameters = -1;
  // norm.out set: the rmsnorm of y's rows in the same launch (qmv_affine_norm_fits).
  QmvAffineNorm norm;
};

// Every config compiled in for `bits` (the candidate universe); filter with
// qmv_affine_can_implement.
const std::vector<QmvAffineConfig> &qmv_affine_configs(int bits);
// The static default for a shape (also the batch-invariant reference order: its K summation
// order depends on (bits, n, k, group) only, never on rows).
QmvAffineConfig qmv_affine_default(int rows, int n, int k, int bits, int group);
// The stream path's candidate for the default (weights once at every row count; its K order
// depends on (bits, k) alone). qmv_affine_default returns it only when
// kQmvAffineDefaultIsStream (qmv_affine_config.cpp) is set, which waits for the H200 sweep.
QmvAffineConfig qmv_affine_stream_default(int rows, int n, int k, int bits, int group);
// The grouped path's default (4 bits, K a multiple of 128; exact-integer mma for every group,
// its K order a function of (k, group, k_slices)). qmv_affine_default returns it only when
// kQmvAffineDefaultIsGrouped (qmv_affine_config.cpp) is set.
QmvAffineConfig qmv_affine_grouped_default(int rows, int n, int k, int bits, int group);
// The ring path's default (weights once, the mma default's K order and so its bits):
// qmv_affine_default returns it where it can run once kQmvAffineDefaultIsRing
// (qmv_affine_config.cpp) is set. A config of 16 K slices at more than 8 rows is not compiled:
// check it with qmv_affine_can_implement.
QmvAffineConfig qmv_affine_ring_default(int rows, int n, int k, int bits, int group);
// The ring config that computes `config`'s bits at this shape: `config` itself on the ring
// path; for an mma config, the ring default's shape at its k_slices (the same K order); none
// for the other paths or where that ring config cannot take the shape.
std::optional<QmvAffineConfig> qmv_affine_ring_twin(const QmvAffineConfig &config, int rows, int n,
                                                    int k, int bits, int group);
// False with a reason when `config` cannot run this shape.
bool qmv_affine_can_implement(const QmvAffineConfig &config, int rows, int n, int k, int bits,
                              int group, std::string *reason);
// Number of K slices summed in fixed order (warps_k x split_k): configs with equal k_slices
// give bit-identical rows for every row count.
inline int qmv_affine_k_slices(const QmvAffineConfig &c) { return c.warps_k * c.split_k; }
KernelResources qmv_affine_resources(const QmvAffineConfig &config, int bits);
// Whether `config` can run the gate/up linear of `inter` outputs a half with the SiLU epilogue
// (QmvAffineArgs::silu_inter) at this format and k: the mma path's register pipeline at 4 bits
// and rows_per_cta 8, inter a multiple of 8, its kernel free of spills.
bool qmv_affine_silu_epilogue_fits(const QmvAffineConfig &config, int bits, int group, int k,
                                   int inter);
// The same without the spill check, which asks the device: whether the build has the epilogue's
// kernel for `config` at all (host only, for candidate lists).
bool qmv_affine_silu_epilogue_compiled(const QmvAffineConfig &config, int bits, int group, int k,
                                       int inter);
// Whether a `deep=2` config's staged group parameters fit the register pipeline's 48 KB of shared
// memory beside its partials at this k (a warp stages 16 rows x (2 slice chunks + 2) words); where
// they do not, the launch would run the slot's own kernel, so can_implement refuses it. Host only.
bool qmv_affine_deep_stage_fits(const QmvAffineConfig &config, int k, int bits);
// Whether a launch of `config` with `args` can normalise y's rows at its end (args.norm): where
// the launch runs the per-weight register pipeline of the one-tile J 2 slot (4 bits, 8-row CTAs,
// `ahead=2`, unstaged: the NORM twin is compiled for it alone), up to 8 rows, without SiLU, and
// its CTA can take rmsnorm's order for args.norm.lanes (rmsnorm_row::grid_norm_fits); the
// tensors 16-byte aligned and a counter given. False with a reason otherwise.
bool qmv_affine_norm_fits(const QmvAffineConfig &config, const QmvAffineArgs &args,
                          std::string *reason = nullptr);
// Whether a launch of `config` with `args` on the current device stages its group parameters in
// shared memory (QmvAffineArgs::stage_parameters; by default the J 2 parameter-vector kernels on
// grids of two CTAs an SM or more and long K slices, and the cp.async ring's int4 kernels on
// slices of 4 chunks or more; same bits either way). For tests and reports.
bool qmv_affine_stages_parameters(const QmvAffineConfig &config, const QmvAffineArgs &args);
// Enqueues one launch on `stream` (a cudaStream_t); never synchronises. Needs no workspace
// (split-K reduces through cluster shared memory).
LaunchStatus qmv_affine_launch(const QmvAffineConfig &config, const QmvAffineArgs &args,
                               void *stream);

} // namespace hone::cuda

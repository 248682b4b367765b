// rmsnorm kernels: host-callable launch interface (no CUDA header needed by includers).
//   h[r, :] = x[r, :] (+ residual[r, :], rounded to bf16 and stored to residual_out)
//   out[r, i] = h[r, i] / sqrt(mean_j h[r, j]^2 + eps) * w[i]
// x, residual, residual_out, out: bf16 [rows, hidden] (row strides in elements); w: bf16
// [hidden]; fp32 arithmetic, out rounded once. Device code and summation order: rmsnorm.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One configuration, `rmsnorm.bf16:vec=8,threads=128,rows_per_cta=1`.
struct RmsnormConfig {
  int vec = 8;          // bf16 per vector load: 8 (16 bytes) or 4 (8 bytes)
  int threads = 128;    // threads per row: 8 .. 512, a power of two
  int rows_per_cta = 1; // rows of one CTA: 1, 2, 4 or 8 (threads x rows_per_cta <= 512)
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not an rmsnorm config.
  static RmsnormConfig from_tactic(const Tactic &tactic);
  bool operator==(const RmsnormConfig &) const = default;
  // Partial sums of a row's squares (threads x vec): the summation order's only parameter.
  int lanes() const { return threads * vec; }
};

struct RmsnormArgs {
  const void *x = nullptr;        // bf16 [rows, hidden], row stride x_stride
  const void *residual = nullptr; // bf16 [rows, hidden] or nullptr (no residual add)
  void *residual_out = nullptr;   // bf16 [rows, hidden]: x + residual; REQUIRED with residual
  const void *w = nullptr;        // bf16 [hidden]
  void *out = nullptr;            // bf16 [rows, hidden], row stride out_stride
  int rows = 0, hidden = 0;
  int64_t x_stride = 0, residual_stride = 0, residual_out_stride = 0, out_stride = 0; // 0: hidden
  float eps = 1e-6f;
  bool dependent = false; // programmatic dependent launch (common/pdl.cuh)
};

// Vector loads per thread a row may take (registers hold the row between the two passes).
inline constexpr int kRmsnormMaxChunks = 8;
inline constexpr int kRmsnormMaxThreadsPerCta = 512;
// Row counts up to this take the default's few-rows form (rmsnorm_default).
inline constexpr int kRmsnormFewRows = 256;

// Every compiled config (the candidate universe); filter with rmsnorm_can_implement.
const std::vector<RmsnormConfig> &rmsnorm_configs();
// The static default. Its summation order (lanes) depends on hidden alone, so every row of a
// multi-row call equals the rows=1 result (batch invariance); at most kRmsnormFewRows rows, a
// narrow row's lanes are spread over twice the threads with 8-byte vectors.
RmsnormConfig rmsnorm_default(int rows, int hidden);
// False with a reason when `config` cannot run this shape (hidden not a multiple of vec, more
// than kRmsnormMaxChunks vectors per thread, idle threads, CTA size).
bool rmsnorm_can_implement(const RmsnormConfig &config, int rows, int hidden, std::string *reason);
// Registers and local memory of the config's kernel.
KernelResources rmsnorm_resources(const RmsnormConfig &config, bool residual);
// Enqueues one launch on `stream` (a cudaStream_t); never synchronises.
// REQUIRES: rows of every tensor and w aligned to vec x 2 bytes.
LaunchStatus rmsnorm_launch(const RmsnormConfig &config, const RmsnormArgs &args, void *stream);

} // namespace hone::cuda

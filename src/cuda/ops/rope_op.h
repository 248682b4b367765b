// The rope op (backend "cuda"): rotary position embedding of a step's query and key heads,
// half rotation (Llama, Qwen2), positions per token (rope.h states the formula). Shape {rows,
// hq, hkv, head_dim}; theta and scaling do not change the speed and are not in the key. Every
// config gives the same bits, so the op is batch invariant.
//
//   hone::cuda::RopeOp op;
//   auto w = op.prepare(hone::Shape{{4, 32, 8, 128}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::batch_invariant).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cuda/kernels/rope/rope.h"
#include "cuda/ops/cuda_op.h"

namespace hone::cuda {

// Relative L2 bound of the gate. Each output is rounded once to bf16 (<= 2^-9 ~ 1.95e-3
// relative); the float64 angle reduced to [-pi, pi] is exact to ~1e-16 x position, __sincosf
// adds <= 2^-21.4 absolute, fp32 products ~1e-7. 4e-3 is twice one rounding; a wrong position,
// frequency, half or head gives O(1).
inline constexpr double kRopeRelativeL2Bound = 4e-3;
// The workload's frequencies (Llama 3's theta, no scaling) and positions (uniform in
// [0, kRopeWorkloadMaxPosition)).
inline constexpr double kRopeWorkloadTheta = 500000.0;
inline constexpr int kRopeWorkloadMaxPosition = 32768;

// Float64 reference for one tensor: x bf16 bits [rows, heads, head_dim] (row stride heads x
// head_dim), rotated by positions[row] with inv_freq (rope_inv_freq); [rows, heads, head_dim].
std::vector<double> rope_reference(std::span<const uint16_t> x, std::span<const int32_t> positions,
                                   std::span<const double> inv_freq, int rows, int heads,
                                   int head_dim);

struct RopeInputs {
  DeviceBuffer q; // bf16 [rows, hq, head_dim]
  DeviceBuffer k; // bf16 [rows, hkv, head_dim]
};

// Output y: bf16 [rows, (hq + hkv) x head_dim]: each token's rotated q heads, then its k heads.
class RopeWorkload final : public CudaWorkloadOf<RopeInputs> {
public:
  RopeWorkload(CudaBackend &backend, int rows, int hq, int hkv, int head_dim);

  size_t bytes_per_launch() const override; // q, k read and written, positions
  // The rows (tokens) the reference covers, when fewer than all:
  // elementwise_reference_row_count((hq + hkv) x head_dim) of them spread over every row
  // (sampled_rows()); empty (all rows) when that count covers them.
  std::vector<int64_t> reference_rows() const override;
  // Float64 reference of copy 0's current inputs for reference_rows() (all rows when empty),
  // [rows sampled, (hq + hkv) x head_dim]; downloads only those rows of q and k.
  std::vector<double> reference() const override;
  LaunchStatus launch(const RopeConfig &config, int copy, int row0, int rows, void *y_rows);

private:
  HONE_CUDA_WORKLOAD_HOOKS(RopeInputs);
  HONE_CUDA_BATCH_INVARIANCE_HOOKS;

  int rows_, hq_, hkv_, head_dim_;
  std::vector<int32_t> positions_host_;
  std::vector<double> inv_freq_;
  DeviceBuffer positions_; // int32 [rows], shared by every copy
  LastConfig<RopeConfig> last_config_;
};

// Buckets: rows exact 1..8, then the power of two at or above (up to 65536); hq, hkv and
// head_dim exact.
class RopeOp final : public CudaOp {
public:
  RopeOp();
  // validate(): Shape {rows, hq, hkv, head_dim}, bf16. Throws Error(invalid_argument) naming the
  // bad value.
  HONE_CUDA_OP_INTERFACE;
};

} // namespace hone::cuda

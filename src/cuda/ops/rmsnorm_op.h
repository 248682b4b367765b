// The rmsnorm op (backend "cuda"): out = x / rms(x) * w over rows of `hidden` bf16 values,
// optionally fused with the residual add of a decoder layer (h = x + residual, stored to
// residual_out, then normalised). Shape {rows, hidden, residual} with residual 0 or 1. Its
// candidates are the compiled rmsnorm configs; the default's summation order depends on hidden
// alone, so the op is batch invariant.
//
//   hone::cuda::RmsnormOp op;
//   auto w = op.prepare(hone::Shape{{4, 4096, 1}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::batch_invariant).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "cuda/ops/cuda_op.h"

namespace hone::cuda {

// Relative L2 bound of the gate. out is rounded once to bf16 (<= 2^-9 relative per element)
// and, with a residual, normalises h rounded once to bf16 (another <= 2^-9); fp32 sums of
// squares (~sqrt(hidden) x 2^-24) and rsqrt (2 ulp) add < 1e-6. Together <= 3.9e-3 per element,
// ~1.5e-3 in L2 on random data; 8e-3, as for the GEMVs, while a wrong row, weight or scale
// gives O(1).
inline constexpr double kRmsnormRelativeL2Bound = 8e-3;
// eps of the workload (Qwen2's; Llama's is 1e-5).
inline constexpr double kRmsnormWorkloadEps = 1e-6;

// Float64 reference: out[r, i] = h[r, i] / sqrt(mean_j h[r, j]^2 + eps) * w[i], h = x (+
// residual, exact). `residual` empty: none. Row-major bf16 bits, [rows, hidden].
std::vector<double> rmsnorm_reference(std::span<const uint16_t> x,
                                      std::span<const uint16_t> residual,
                                      std::span<const uint16_t> w, int rows, int hidden,
                                      double eps);

struct RmsnormInputs {
  DeviceBuffer x;        // bf16 [rows, hidden]
  DeviceBuffer residual; // bf16 [rows, hidden] (empty without residual)
  DeviceBuffer w;        // bf16 [hidden]
};

// Output y: out [rows, hidden], then with a residual residual_out [rows, hidden] (y rows
// rows .. 2 rows - 1), both gated.
class RmsnormWorkload final : public CudaWorkloadOf<RmsnormInputs> {
public:
  RmsnormWorkload(CudaBackend &backend, int rows, int hidden, bool residual);

  size_t bytes_per_launch() const override; // x (+ residual), w, out (+ residual_out)
  // The rows of y the reference covers, when fewer than all: the input rows of
  // sampled_input_rows(), their out rows, then (with a residual) their residual_out rows;
  // empty (all rows) when that sample covers every input row.
  std::vector<int64_t> reference_rows() const override;
  // Float64 reference of copy 0's current inputs for reference_rows() (all rows when empty):
  // out, then residual_out, of the sampled input rows; downloads only those rows of x and
  // residual.
  std::vector<double> reference() const override;
  // Enqueues `config` over explicit buffers (y_out: out, then residual_out rows below it).
  LaunchStatus launch(const RmsnormConfig &config, int copy, int row0, int rows, void *out,
                      void *residual_out);

private:
  HONE_CUDA_WORKLOAD_HOOKS(RmsnormInputs);
  HONE_CUDA_BATCH_INVARIANCE_HOOKS;

  // elementwise_reference_row_count(outputs an input row gives: hidden, 2 x hidden with a
  // residual) input rows spread over every row (sampled_rows()); empty when that count covers
  // them.
  std::vector<int64_t> sampled_input_rows() const;

  int rows_, hidden_;
  bool residual_;
  DeviceBuffer scratch_row_; // the other output of a rows=1 launch
  LastConfig<RmsnormConfig> last_config_;
};

// Buckets: rows exact 1..8, then the power of two at or above (up to 65536); hidden exact;
// residual 0 or 1.
class RmsnormOp final : public CudaOp {
public:
  RmsnormOp();
  // validate(): Shape {rows, hidden, residual}, bf16. Throws Error(invalid_argument) naming the bad
  // value.
  HONE_CUDA_OP_INTERFACE;
  // 2: the default takes twice the threads with 8-byte vectors for narrow rows at up to
  // kRmsnormFewRows rows (same lanes, same bits), so picks made against the old default are not
  // served.
  int version() const override { return 2; }
};

} // namespace hone::cuda

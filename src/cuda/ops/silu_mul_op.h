// The silu_mul op (backend "cuda"): out = silu(gate) x up, the activation of a gated MLP, on
// the fused gate/up projection output [rows, 2 x inter] (gate the first half of each row, up
// the second) or two tensors. Shape {rows, inter}. Every config gives the same bits (no
// reduction), so the op is batch invariant.
//
//   hone::cuda::SiluMulOp op;
//   auto w = op.prepare(hone::Shape{{4, 14336}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::batch_invariant).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cuda/kernels/silu_mul/silu_mul.h"
#include "cuda/ops/cuda_op.h"

namespace hone::cuda {

// Relative L2 bound of the gate. out is rounded once to bf16 (<= 2^-9 ~ 1.95e-3 relative per
// element); exp (ex2.approx, ~2^-22) and the fp32 products add < 1e-6. 4e-3 is twice one
// rounding: a wrong element, row or half of the fused input gives O(1).
inline constexpr double kSiluMulRelativeL2Bound = 4e-3;

// Float64 reference: out[r, i] = g / (1 + exp(-g)) x u, g = gate_up[r, i], u = gate_up[r,
// inter + i]; gate_up bf16 bits [rows, 2 x inter].
std::vector<double> silu_mul_reference(std::span<const uint16_t> gate_up, int rows, int inter);

struct SiluMulInputs {
  DeviceBuffer gate_up; // bf16 [rows, 2 x inter]: gate | up
};

class SiluMulWorkload final : public CudaWorkloadOf<SiluMulInputs> {
public:
  SiluMulWorkload(CudaBackend &backend, int rows, int inter);

  size_t bytes_per_launch() const override; // gate, up, out
  // The rows the reference covers, when fewer than all: elementwise_reference_row_count(inter)
  // of them spread over every row (sampled_rows()); empty (all rows) when that count covers
  // them. At rows=8192, inter=14336: 292 rows, 4.2 M outputs of 117 M.
  std::vector<int64_t> reference_rows() const override;
  // Float64 reference of copy 0's current inputs for reference_rows() (all rows when empty),
  // [rows sampled, inter]; downloads only those rows of gate_up.
  std::vector<double> reference() const override;
  LaunchStatus launch(const SiluMulConfig &config, int copy, int row0, int rows, void *out);

private:
  HONE_CUDA_WORKLOAD_HOOKS(SiluMulInputs);
  HONE_CUDA_BATCH_INVARIANCE_HOOKS;

  int rows_, inter_;
  LastConfig<SiluMulConfig> last_config_;
};

// Buckets: rows exact 1..8, then the power of two at or above (up to 32768); inter exact.
class SiluMulOp final : public CudaOp {
public:
  SiluMulOp();
  // validate(): Shape {rows, inter}, bf16. Throws Error(invalid_argument) naming the bad value.
  HONE_CUDA_OP_INTERFACE;
};

} // namespace hone::cuda

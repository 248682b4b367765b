// The inputs and the reference of an affine-quantized linear layer on the GPU, shared by
// qmm.affine and quantized_linear (the two ops run the same problem on the same one copy of
// the weights): Y[rows, n] = X[rows, k] . W[n, k]^T with W in the qmv.affine layout. It owns
// the rotation copies of X, q, scales and biases, draws them, downloads them and computes the
// float64 reference on the exactly dequantised weights, for every row when there are few and
// otherwise for a sample spread over all of them (first, last, evenly between): the reference
// costs rows x n x k float64 multiply-adds, which at prefill sizes would take minutes. The
// sample holds 64 rows, fewer (down to 16) where n x k is large, so that it stays near 2^31
// multiply-adds (~0.2 s on 16 cores; the tuner checks every candidate). Every output is still
// checked for NaN (the poison), so an unwritten tile anywhere fails.
//
//   class QmmAffineWorkload final : public AffineLinearWorkload { ... }; // launch hooks
//   std::vector<double> ref = w.reference();   // rows reference_rows(), all of n
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/backend/device_buffer.h"
#include "cuda/gate/cuda_workload.h"
#include "cuda/ops/qmv_affine_reference.h"

namespace hone::cuda {

class CudaBackend;

// Relative L2 bound of the qmm.affine / quantized_linear gate against the float64 reference
// on the exact weights. The GEMM dequantises each weight in bf16 arithmetic: q * scale is
// rounded to bf16, then + bias is rounded again (CUTLASS's ConvertAndScaleWithZero), each
// rounding off by at most 2^-9 relative, ~2^-9 / sqrt(3) in RMS. The first is relative to
// |q * scale|, which for the centred groups hone draws (fill_random_affine_params: bias ~
// -range / 2) has twice the RMS of |w|, so the weights carry ~2.3e-3 + 1.1e-3 in quadrature
// (~2.5e-3) relative RMS error; over a k-term dot product of independent terms that is also
// the output's relative L2 error. The bf16 output adds 1.1e-3 in quadrature and fp32
// accumulation (split-K partials included) ~sqrt(k) x 2^-24, negligible: ~3e-3 expected.
// 8e-3, the bound of qmv.affine and gemv.bf16, keeps 2.5x headroom for cancellation in small
// outputs while a wrong nibble, group, scale or tile is an O(1) error and fails.
inline constexpr double kAffineLinearRelativeL2Bound = 8e-3;

// Rows of Y the reference covers at most, and at least when it samples.
inline constexpr int kAffineLinearReferenceRows = 64;
inline constexpr int kAffineLinearMinReferenceRows = 16;
// [multiply-adds] the sampled reference aims at.
inline constexpr double kAffineLinearReferenceWork = 2147483648.0;

struct AffineLinearInputs {
  DeviceBuffer x;      // bf16 [rows, k]
  DeviceBuffer q;      // uint32 [n, k * bits / 32]
  DeviceBuffer scales; // bf16 [n, k / group]
  DeviceBuffer biases; // bf16 [n, k / group]
};

class AffineLinearWorkload : public CudaWorkloadOf<AffineLinearInputs> {
public:
  // [bytes] packed q + scales + biases + X + Y.
  size_t bytes_per_launch() const override;
  // [bytes] of the quantized weights one launch reads: packed q + scales + biases.
  size_t weight_bytes() const;

  // Problem and buffers, for peers (cuBLASLt on dequantised weights) and tests.
  const QmvAffineProblem &problem() const { return p_; }
  int rows() const { return p_.rows; }
  int n() const { return p_.n; }
  int k() const { return p_.k; }
  int bits() const { return p_.bits; }
  int group() const { return p_.group; }
  const void *x(int copy) const { return copy_at(copy).x.data(); }
  const uint32_t *q(int copy) const { return copy_at(copy).q.as<const uint32_t>(); }
  const void *scales(int copy) const { return copy_at(copy).scales.data(); }
  const void *biases(int copy) const { return copy_at(copy).biases.data(); }

  // Synchronous copies to the host (bf16 bits, q words).
  std::vector<uint16_t> download_x(int copy) const;
  std::vector<uint32_t> download_q(int copy) const;
  std::vector<uint16_t> download_scales(int copy) const;
  std::vector<uint16_t> download_biases(int copy) const;

  // The rows the reference covers, when fewer than all: reference_row_count() of them spread
  // over every row, ascending; empty (all rows) when that count covers them.
  std::vector<int64_t> reference_rows() const override;
  // kAffineLinearReferenceWork / (n x k) rows, within [16, 64].
  int reference_row_count() const;
  // Float64 reference of copy 0's current inputs for reference_rows() (all rows when empty),
  // [rows sampled, n] row-major.
  std::vector<double> reference() const override;

protected:
  // REQUIRES: the op's validate() accepted the problem. The derived constructor calls
  // set_rotation(1) once its own members exist. `out_cols`: Y's width where it is not n (an
  // epilogue that combines outputs, such as qmv.affine.silu_mul's n / 2).
  AffineLinearWorkload(CudaBackend &backend, const QmvAffineProblem &problem, int64_t out_cols = 0);

private:
  AffineLinearInputs make_copy() const override;
  void fill_copy(size_t copy) override;

  QmvAffineProblem p_;
};

} // namespace hone::cuda

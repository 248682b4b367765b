// Float64 host reference for qmv.affine (CUDA): the product of X with the exactly
// dequantised weights. Outputs are compared with compare_bf16 (cuda/gate/bf16_compare.h).
//
//   std::vector<double> ref = qmv_affine_reference(x, q, scales, biases, shape);
//   Bf16Comparison c = compare_bf16(y, ref);
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hone::cuda {

struct QmvAffineProblem {
  int rows = 0, n = 0, k = 0, bits = 4, group = 64;
};

// Y[r, j] = sum_i X[r, i] * (q[j, i] * scale[j, i / group] + bias[j, i / group]) in float64.
// X [rows, k] bf16 bits; q uint32 [n, k * bits / 32] (values along K, lowest bits first);
// scales, biases bf16 bits [n, k / group].
// NOTE: q * scale + bias is exact in float64 (a bf16 scale has 8 significant bits, q at most
// 8, and the bias is within a few binades), and so is each product with a bf16 X; only the
// sum rounds. The weights are deliberately not rounded to bf16 as a kernel may do: the gate
// bound accounts for that rounding. Runs on all hardware threads.
std::vector<double> qmv_affine_reference(std::span<const uint16_t> x, std::span<const uint32_t> q,
                                         std::span<const uint16_t> scales,
                                         std::span<const uint16_t> biases,
                                         const QmvAffineProblem &p);

} // namespace hone::cuda

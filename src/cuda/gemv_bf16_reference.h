// Float64 host reference for gemv.bf16 and the comparison used by its correctness gate.
//
//   std::vector<double> ref = gemv_bf16_reference(x, w, rows, n, k);
//   GemvBf16Comparison c = compare_gemv_bf16(y, ref);   // c.relative_l2, c.nan_count
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hone::cuda {

// Y[r, j] = sum_k X[r, k] * W[j, k] in float64; X [rows, k], W [n, k] row-major bf16 bits.
// NOTE: a product of two bf16 values has at most 16 significant bits, so it is exact in
// float32; only the sum is rounded, in float64. Runs on all hardware threads.
std::vector<double> gemv_bf16_reference(std::span<const uint16_t> x, std::span<const uint16_t> w,
                                        int rows, int n, int k);

struct GemvBf16Comparison {
  double relative_l2 = 0; // ||y - ref|| / ||ref|| over the finite outputs
  size_t nan_count = 0;   // outputs left NaN (unwritten: the poison pattern survives) or NaN
};
GemvBf16Comparison compare_gemv_bf16(std::span<const uint16_t> y, std::span<const double> ref);

} // namespace hone::cuda

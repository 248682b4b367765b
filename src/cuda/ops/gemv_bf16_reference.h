// Float64 host reference for gemv.bf16 (compared with compare_bf16, cuda/gate/bf16_compare.h).
//
//   std::vector<double> ref = gemv_bf16_reference(x, w, rows, n, k);
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

} // namespace hone::cuda

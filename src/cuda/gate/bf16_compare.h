// The comparison of a bf16 output with its float64 reference, used by every CUDA op's gate.
//
//   Bf16Comparison c = compare_bf16(y, ref);   // c.relative_l2, c.nan_count
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace hone::cuda {

struct Bf16Comparison {
  double relative_l2 = 0; // ||y - ref|| / ||ref|| over the finite outputs
  size_t nan_count = 0;   // outputs left NaN (unwritten: the poison pattern survives) or NaN
};
// REQUIRES: y.size() == ref.size().
Bf16Comparison compare_bf16(std::span<const uint16_t> y, std::span<const double> ref);

} // namespace hone::cuda

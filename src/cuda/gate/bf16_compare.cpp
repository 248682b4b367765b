#include "cuda/gate/bf16_compare.h"

#include <cmath>

#include "cuda/backend/bf16.h"
#include "hone/error.h"

namespace hone::cuda {

Bf16Comparison compare_bf16(std::span<const uint16_t> y, std::span<const double> ref) {
  HONE_CHECK(y.size() == ref.size(), "output and reference sizes differ");
  Bf16Comparison c;
  double diff2 = 0;
  double ref2 = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    ref2 += ref[i] * ref[i];
    if (bf16_is_nan(y[i])) {
      ++c.nan_count;
      continue;
    }
    const double d = static_cast<double>(bf16_to_float(y[i])) - ref[i];
    diff2 += d * d;
  }
  c.relative_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return c;
}

} // namespace hone::cuda

#include "cpu/check_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "hone/number_format.h"

namespace hone::cpu {

void fill_uniform(std::span<float> out, uint64_t seed, float lo, float hi) {
  Random rng(seed);
  for (float &v : out)
    v = rng.uniform(lo, hi);
}

void poison(std::span<float> out) {
  for (float &v : out)
    v = std::numeric_limits<float>::quiet_NaN();
}

double f32_dot_bound(int64_t k) {
  return 8.0 * 0x1p-24 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 16)));
}

int64_t first_nan(std::span<const float> out) {
  for (size_t i = 0; i < out.size(); ++i)
    if (std::isnan(out[i]))
      return static_cast<int64_t>(i);
  return -1;
}

CheckResult compare_tolerance(std::span<const float> out, std::span<const double> ref,
                              double bound) {
  CheckResult r;
  r.bound = bound;
  if (const int64_t i = first_nan(out); i >= 0) {
    r.status = Status::gate_failed;
    r.error = std::numeric_limits<double>::infinity();
    r.reason = "output element " + std::to_string(i) + " is NaN (not written or overflowed)";
    return r;
  }
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  r.error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (!(r.error <= bound)) {
    r.status = Status::gate_failed;
    r.reason = "relative L2 error " + format_g(r.error) + " exceeds bound " + format_g(bound);
  }
  return r;
}

int64_t count_bit_mismatches(std::span<const float> out, std::span<const float> expected) {
  int64_t mismatches = 0;
  for (size_t i = 0; i < out.size(); ++i)
    mismatches += std::memcmp(&out[i], &expected[i], sizeof(float)) != 0;
  return mismatches;
}

} // namespace hone::cpu

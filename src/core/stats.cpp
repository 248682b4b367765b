#include "hone/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hone {

namespace {
// Linear interpolation between order statistics at quantile q in [0, 1].
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(i);
  return v[i] + (v[j] - v[i]) * frac;
}
} // namespace

double median(std::span<const double> values) {
  if (values.empty())
    return 0;
  return quantile({values.begin(), values.end()}, 0.5);
}

double iqr(std::span<const double> values) {
  if (values.size() < 2)
    return 0;
  std::vector<double> v(values.begin(), values.end());
  return quantile(v, 0.75) - quantile(v, 0.25);
}

double relative_spread(std::span<const double> values) {
  const double m = median(values);
  return m == 0 ? 0 : iqr(values) / m;
}

} // namespace hone

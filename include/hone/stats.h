// Order statistics used by measurement and the tuner.
#pragma once

#include <span>

namespace hone {

// Median of the values (mean of the middle two for an even count); 0 for none.
double median(std::span<const double> values);
// Interquartile range (linear interpolation between order statistics).
double iqr(std::span<const double> values);
// IQR / median, the relative spread; 0 when the median is 0.
double relative_spread(std::span<const double> values);

} // namespace hone

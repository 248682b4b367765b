// Helpers the CPU workloads share: a seeded generator of test inputs and the gate's
// comparisons against a float64 reference.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "hone/op.h"

namespace hone::cpu {

// splitmix64: a small, fast, seedable generator; the same seed gives the same inputs.
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f;
  }

private:
  uint64_t state_;
};

void fill_uniform(std::span<float> out, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
// Fills with quiet NaN so that any element a kernel fails to write is caught.
void poison(std::span<float> out);

// Gate bound for an f32 dot product of length k against a float64 reference (relative L2
// error over the whole output). Rounding error of a length-k f32 sum of random-signed terms
// grows like sqrt(k) x 2^-24 (Higham & Mary's probabilistic bound; worst case k x 2^-24),
// and the kernels' several partial sums only shrink it, so 8 x 2^-24 x sqrt(k) leaves a
// margin of 8x or more (measured errors sit far lower still). A bug that drops or repeats
// one term per output gives a relative error near 1/sqrt(k), which stays at least 8x above
// the bound up to k = 2^18 (tens of thousands x for usual k of a few thousand).
double f32_dot_bound(int64_t k);

// Tolerance verdict for `out` against `ref`: NaN anywhere fails, else relative L2 error
// under `bound`.
CheckResult compare_tolerance(std::span<const float> out, std::span<const double> ref,
                              double bound);
// Counts elements of `out` whose bits differ from `expected`.
int64_t count_bit_mismatches(std::span<const float> out, std::span<const float> expected);
// First NaN index of `out`, or -1.
int64_t first_nan(std::span<const float> out);

} // namespace hone::cpu

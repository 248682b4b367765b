// quantize_affine / dequantize_affine (include/hone/ops/cpu.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "cpu/bf16.h"
#include "cpu/qmv_affine.h"
#include "hone/error.h"
#include "hone/ops/cpu.h"

namespace hone::ops::cpu {

namespace {
void check_problem(int64_t n, int64_t k, int bits, int group) {
  if (n < 1)
    HONE_INVALID_ARGUMENT("affine quantization: n=" + std::to_string(n) + " is below 1");
  if (auto why = hone::cpu::qmv_problem_error(k, bits, group))
    HONE_INVALID_ARGUMENT("affine quantization: " + *why);
}
} // namespace

AffineQuantized quantize_affine(const float *w, int64_t n, int64_t k, int bits, int group) {
  check_problem(n, k, bits, group);
  const int64_t groups = k / group;
  const int per_word = 32 / bits;
  const uint32_t q_max = (1u << bits) - 1u;
  AffineQuantized out;
  out.packed.assign(static_cast<size_t>(n * k / per_word), 0u);
  out.scales.resize(static_cast<size_t>(n * groups));
  out.biases.resize(static_cast<size_t>(n * groups));
  for (int64_t row = 0; row < n; ++row)
    for (int64_t g = 0; g < groups; ++g) {
      const float *v = w + row * k + g * group;
      const auto [lo, hi] = std::minmax_element(v, v + group);
      const uint16_t scale_bits = hone::cpu::float_to_bf16((*hi - *lo) / static_cast<float>(q_max));
      const uint16_t bias_bits = hone::cpu::float_to_bf16(*lo);
      out.scales[static_cast<size_t>(row * groups + g)] = scale_bits;
      out.biases[static_cast<size_t>(row * groups + g)] = bias_bits;
      // q from the bf16-rounded scale and bias, so that dequantisation inverts exactly
      // what is stored; a zero scale (constant group) maps every value to the bias.
      const float scale = hone::cpu::bf16_to_float(scale_bits);
      const float bias = hone::cpu::bf16_to_float(bias_bits);
      for (int i = 0; i < group; ++i) {
        uint32_t q = 0;
        if (scale > 0.0f) {
          const float t = std::nearbyint((v[i] - bias) / scale);
          q = static_cast<uint32_t>(std::clamp(t, 0.0f, static_cast<float>(q_max)));
        }
        const int64_t j = g * group + i;
        out.packed[static_cast<size_t>((row * k + j) / per_word)] |= q << ((j % per_word) * bits);
      }
    }
  return out;
}

std::vector<float> dequantize_affine(const AffineQuantized &q, int64_t n, int64_t k, int bits,
                                     int group) {
  check_problem(n, k, bits, group);
  const int64_t groups = k / group;
  const int per_word = 32 / bits;
  const uint32_t mask = (1u << bits) - 1u;
  if (q.packed.size() != static_cast<size_t>(n * k / per_word) ||
      q.scales.size() != static_cast<size_t>(n * groups) ||
      q.biases.size() != static_cast<size_t>(n * groups))
    HONE_INVALID_ARGUMENT("affine dequantization: buffer sizes do not match n=" +
                          std::to_string(n) + ", k=" + std::to_string(k) +
                          ", bits=" + std::to_string(bits) + ", group=" + std::to_string(group));
  std::vector<float> w(static_cast<size_t>(n * k));
  for (int64_t row = 0; row < n; ++row)
    for (int64_t j = 0; j < k; ++j) {
      const size_t g = static_cast<size_t>(row * groups + j / group);
      const uint32_t word = q.packed[static_cast<size_t>((row * k + j) / per_word)];
      const uint32_t v = (word >> ((j % per_word) * bits)) & mask;
      // The kernels' expression, so that references match them bit for bit per weight.
      w[static_cast<size_t>(row * k + j)] =
          static_cast<float>(v) * hone::cpu::bf16_to_float(q.scales[g]) +
          hone::cpu::bf16_to_float(q.biases[g]);
    }
  return w;
}

} // namespace hone::ops::cpu

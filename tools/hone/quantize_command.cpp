#include "hone/quantize_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "hone/affine_files.h"
#include "hone/bf16.h"
#include "hone/error.h"
#include "hone/format.h"

namespace hone::cli {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// Throws naming the first element that is NaN or infinite: its quantization is undefined.
void check_finite(const FloatMatrix &w, const std::string &source) {
  for (size_t i = 0; i < w.values.size(); ++i)
    if (!std::isfinite(w.values[i]))
      HONE_INVALID_ARGUMENT(source + ": element [" + std::to_string(i / w.k) + ", " +
                            std::to_string(i % w.k) + "] is " + number(w.values[i]) +
                            "; quantization needs finite weights");
}

struct ErrorSummary {
  double max_error = 0; // max |w - dequantized|
  double max_ratio = 0; // max |w - dequantized| / bound of the element's group
};

// Per element, |w - (q * scale + bias)| <= scale / 2 where q is not clamped; where it is, the
// error is the bf16 rounding of scale (times q_max) and of bias (min), each at most 2^-8
// relative. The bound adds both, plus float32 rounding.
ErrorSummary summarize_error(const FloatMatrix &w, const std::vector<float> &back,
                             const AffineDirectory &a) {
  const double q_max = double((1 << a.bits) - 1);
  const int64_t groups = a.k / a.group;
  ErrorSummary out;
  for (int64_t i = 0; i < w.n * w.k; ++i) {
    const auto g = static_cast<size_t>((i / w.k) * groups + (i % w.k) / a.group);
    const double scale = bf16_to_float(a.q.scales[g]), bias = bf16_to_float(a.q.biases[g]);
    const double range = q_max * scale + std::abs(bias);
    const double bound = scale / 2 + range * (0x1p-8 * (1 + 0x1p-7) + 0x1p-22);
    const double error =
        std::abs(double(w.values[static_cast<size_t>(i)]) - back[static_cast<size_t>(i)]);
    out.max_error = std::max(out.max_error, error);
    if (error > 0)
      out.max_ratio = std::max(out.max_ratio, bound > 0 ? error / bound : INFINITY);
  }
  return out;
}

} // namespace

QuantizeCommand::QuantizeCommand(CLI::App &parent)
    : app_(parent.add_subcommand(
          "quantize", "Affine-quantize a float32 weight matrix into a quantized directory")) {
  app_->add_option("input", options_.input,
                   "Row-major float32 [n, k]: .npy (format 1.0-3.0, '<f4', C order), or raw "
                   "little-endian floats with --n and --k")
      ->required();
  app_->add_option("output", options_.output,
                   "Directory to write (replaced when it is a quantized directory)")
      ->required();
  n_option_ = app_->add_option("--n", options_.n, "Rows (output features) of a raw input");
  k_option_ = app_->add_option("--k", options_.k, "Columns (input features) of a raw input");
  app_->add_option("--bits", options_.bits, "Bits per weight: 4 or 8")->capture_default_str();
  app_->add_option("--group", options_.group, "Weights per scale and bias along k: 32, 64, 128")
      ->capture_default_str();
  app_->footer(
      "Per group of `group` weights along k: scale = (max - min) / (2^bits - 1) and bias = min,\n"
      "both rounded to bf16, then q = round((w - bias) / scale) in [0, 2^bits - 1], so that\n"
      "w ~ q * scale + bias within scale / 2 (plus the bf16 rounding of scale and bias).\n"
      "\n"
      "The output directory (format hone.affine, version 1), little-endian, no headers:\n"
      "  affine.json  {\"format\": \"hone.affine\", \"format_version\": 1, n, k, bits,\n"
      "               group, ...}\n"
      "  q.bin        uint32 [n, k * bits / 32]: 32 / bits values per word along k, lowest\n"
      "               bits first (the qmv.affine layout; copy it to the device as it is)\n"
      "  scales.bin   bf16 [n, k / group]\n"
      "  biases.bin   bf16 [n, k / group]\n"
      "Bad input (bits, group, k not a multiple of group, a wrong file size, a malformed .npy\n"
      "header) exits 2 and writes nothing.");
}

int QuantizeCommand::run() {
  const QuantizeCommandOptions &o = options_;
  if (o.bits != 4 && o.bits != 8)
    HONE_INVALID_ARGUMENT("--bits " + std::to_string(o.bits) + " is not 4 or 8");
  if (o.group != 32 && o.group != 64 && o.group != 128)
    HONE_INVALID_ARGUMENT("--group " + std::to_string(o.group) + " is not 32, 64 or 128");
  std::optional<int64_t> n, k;
  if (n_option_->count() > 0) {
    if (o.n < 1)
      HONE_INVALID_ARGUMENT("--n " + std::to_string(o.n) + " is below 1");
    n = o.n;
  }
  if (k_option_->count() > 0) {
    if (o.k < 1)
      HONE_INVALID_ARGUMENT("--k " + std::to_string(o.k) + " is below 1");
    k = o.k;
  }
  // Everything is judged before anything is written.
  check_affine_output(o.output);
  const FloatMatrix w = read_float_matrix(o.input, n, k);
  if (w.k % o.group != 0)
    HONE_INVALID_ARGUMENT("k=" + std::to_string(w.k) + " of " + o.input +
                          " is not a multiple of --group " + std::to_string(o.group));
  check_finite(w, o.input);

  AffineDirectory a;
  a.n = w.n;
  a.k = w.k;
  a.bits = o.bits;
  a.group = o.group;
  a.q = ops::cpu::quantize_affine(w.values.data(), w.n, w.k, o.bits, o.group);
  const std::vector<float> back = ops::cpu::dequantize_affine(a.q, w.n, w.k, o.bits, o.group);
  const ErrorSummary error = summarize_error(w, back, a);
  write_affine_directory(o.output, a);

  const size_t q_bytes = a.q.packed.size() * 4;
  const size_t param_bytes = (a.q.scales.size() + a.q.biases.size()) * 2;
  std::cout << "quantized " << o.input << " [" << w.n << ", " << w.k
            << "] float32 to bits=" << o.bits << ", group=" << o.group << " in " << o.output
            << ": q " << format_bytes(q_bytes) << ", scales + biases " << format_bytes(param_bytes)
            << '\n'
            << "max |w - dequantized| " << number(error.max_error) << ", at most "
            << number(error.max_ratio) << " of its group's bound (scale / 2 + bf16 rounding of "
            << "scale and bias)\n";
  return 0;
}

} // namespace hone::cli

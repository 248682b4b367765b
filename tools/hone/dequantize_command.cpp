#include "hone/dequantize_command.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "hone/affine_files.h"
#include "hone/format.h"

namespace hone::cli {

DequantizeCommand::DequantizeCommand(CLI::App &parent)
    : app_(parent.add_subcommand(
          "dequantize", "Write the float32 weights of a quantized directory (hone quantize)")) {
  app_->add_option("input", input_, "Quantized directory written by `hone quantize`")->required();
  app_->add_option("output", output_,
                   "Float32 [n, k] file to write: .npy (version 1.0) when the name ends in "
                   ".npy, else raw little-endian floats")
      ->required();
  app_->footer("w[n, k] = q * scale + bias in float32, row-major. A malformed directory (header,\n"
               "format version, bits, group, file sizes) exits 2 and writes nothing.");
}

int DequantizeCommand::run() {
  const AffineDirectory a = read_affine_directory(input_);
  FloatMatrix w;
  w.n = a.n;
  w.k = a.k;
  w.values = ops::cpu::dequantize_affine(a.q, a.n, a.k, a.bits, a.group);
  write_float_matrix(output_, w);
  std::cout << "dequantized " << input_ << " (bits=" << a.bits << ", group=" << a.group << ") to "
            << output_ << ": float32 [" << a.n << ", " << a.k << "], "
            << (is_npy_path(output_) ? ".npy" : "raw") << ", "
            << format_bytes(w.values.size() * sizeof(float)) << '\n';
  return 0;
}

} // namespace hone::cli

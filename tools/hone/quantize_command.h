// `hone quantize`: affine-quantizes a row-major float32 weight matrix [n, k] on the host
// (hone_quantize_affine's rounding) and writes a quantized directory: affine.json, q.bin,
// scales.bin, biases.bin, in the layout the qmv.affine kernels read (affine_files.h).
//
//   hone quantize w.npy w4 --bits 4 --group 64
//   hone quantize w.bin w8 --n 4096 --k 14336 --bits 8 --group 128
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace hone::cli {

struct QuantizeCommandOptions {
  std::string input;  // raw little-endian float32 (with --n, --k) or .npy
  std::string output; // the quantized directory
  int64_t n = 0;      // --n: rows of a raw input (checked against an .npy header)
  int64_t k = 0;      // --k: columns of a raw input
  int bits = 4;
  int group = 64;
};

class QuantizeCommand {
public:
  explicit QuantizeCommand(CLI::App &parent);
  CLI::App *app() const { return app_; }
  int run();

private:
  CLI::App *app_;
  CLI::Option *n_option_;
  CLI::Option *k_option_;
  QuantizeCommandOptions options_;
};

} // namespace hone::cli

// `hone dequantize`: reads a quantized directory written by `hone quantize` and writes the
// float32 matrix w[n, k] = q * scale + bias, row-major: .npy when the output path ends in
// .npy, else raw little-endian floats.
//
//   hone dequantize w4 w4.npy
//   hone dequantize w4 w4.bin
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace hone::cli {

class DequantizeCommand {
public:
  explicit DequantizeCommand(CLI::App &parent);
  CLI::App *app() const { return app_; }
  int run();

private:
  CLI::App *app_;
  std::string input_;  // the quantized directory
  std::string output_; // the float32 file
};

} // namespace hone::cli

// `hone step`: one decode step of a model (config.json) through hone's ops, captured in a
// CUDA graph: step time, tokens/s, bytes read per step and their fraction of the measured read
// bandwidth, default and tuned tactics with and without programmatic dependent launch,
// interleaved in one run, PDL checked bit for bit against PDL off, and a per-op breakdown.
//
//   hone step --model models/llama-3.1-8b.json --batch 1 --context 4k
//   hone step --model models/qwen2.5-1.5b.json --batch 16 --context 4096 --quant int4:g64
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "hone/global_options.h"

namespace CLI {
class App;
}

namespace hone::cli {

struct StepOptions {
  std::string model;          // config.json path
  int64_t batch = 1;
  std::string context = "4k"; // tokens cached per request: 4096, 4k, 32K
  std::string quant = "bf16"; // bf16, int4:g64, int8:g128, ...
  int64_t page_size = 16;
  int samples = 9;
  int check_replays = 1000;
  bool no_breakdown = false;
  uint64_t seed = 1;
  std::string json_path;
};

// "bf16" -> {16, 0}; "int4:g64" -> {4, 64}. Throws Error(invalid_argument) naming the value.
std::pair<int, int> parse_quant(const std::string &text);
// "4096", "4k", "32K" -> tokens (k = 1024). Throws Error(invalid_argument) naming `option`.
int64_t parse_tokens(const std::string &text, std::string_view option);

class StepCommand {
public:
  StepCommand(CLI::App &parent, const GlobalOptions &global);
  CLI::App *app() const { return app_; }
  int run();

private:
  const GlobalOptions &global_;
  CLI::App *app_;
  StepOptions options_;
};

} // namespace hone::cli

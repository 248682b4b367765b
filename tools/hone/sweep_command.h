// `hone sweep`: a model's decode step over a batch x context grid. Every cell times the
// default step (no cache, no lazy tune) and the tuned one (the dispatcher's cache), each with
// PDL off and on, interleaved as `hone step` does, and picks the chain tactic by the same rule.
// Writes DIR/sweep.md and DIR/sweep.json after every cell (an interrupted sweep keeps the cells
// it finished), then the charts of scripts/plot_sweep.py (PNG).
//
//   hone sweep --model models/llama-3.1-8b.json --batch 1-16 --context 1k-32k --out out/sweep
//   hone sweep --model models/qwen2.5-1.5b.json --batch 1,4,16 --context 4k --quant int4:g64
//              --peer out/decode_step_torch.json
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "hone/global_options.h"

namespace CLI {
class App;
}

namespace hone::cli {

struct SweepOptions {
  std::string model;              // config.json path
  std::string batch = "1-16";     // a range a-b (powers of two) or a list a,b,c
  std::string context = "1k-32k"; // the same, in tokens (4096, 4k)
  std::string quant = "bf16";     // bf16, int4:g64, int8:g128, ...
  int64_t page_size = 16;
  int samples = 9;
  int check_replays = 100; // per PDL variant and cell
  uint64_t seed = 1;
  std::string out = "sweep"; // the directory written
  std::string peer;          // bench/peers/decode_step_torch.py --json output
  std::string plot_script;   // default: scripts/plot_sweep.py of the source tree built from
};

// Runs `python3 SCRIPT JSON DIR`, waiting for it. Returns why no chart was written (python3 not
// found, the script missing or failing; the script says when matplotlib is missing), or
// nullopt when it succeeded.
std::optional<std::string> plot_sweep(const std::filesystem::path &script,
                                      const std::filesystem::path &json,
                                      const std::filesystem::path &dir);

class SweepCommand {
public:
  SweepCommand(CLI::App &parent, const GlobalOptions &global);
  CLI::App *app() const { return app_; }
  int run();

private:
  const GlobalOptions &global_;
  CLI::App *app_;
  SweepOptions options_;
};

} // namespace hone::cli

// `hone bench`: measure one shape's default tactic, its cached pick and any tactic or peer
// named on the command line, interleaved in one run with the tuner's measurement (batched
// samples, cold-LLC rotation), and report median, spread and ratio to the default.
//
//   hone bench --op gemv.f32 --shape rows=8,n=4096,k=4096
//   hone bench --op gemv.f32 --shape rows=1,n=4096,k=4096 --tactic 'gemv.f32:...' --warm
//   hone --backend cuda bench --op gemv.bf16 --shape rows=8,n=4096,k=4096 --peer cublas
#pragma once

#include <string>

#include "hone/global_options.h"

namespace CLI {
class App;
}

namespace hone::cli {

struct BenchOptions {
  std::string op;
  std::string shape;
  std::string tactic; // an extra tactic, verbatim (Tactic::str())
  std::string peer;   // a matched peer of the op in the registry, e.g. "cublas"
  bool warm = false;  // reuse one input copy (default: cold, rotating copies)
  bool cold = false;
  int samples = 0;       // fixed sample count; 0: stop on noise (IQR/median < 1%) or time
  double max_time = 2.0; // [seconds] budget for the noise-driven stop
  int batch = 0;         // fixed launches per sample; 0 calibrates
  std::string json;      // --json FILE
  std::string numerics;  // --numerics batch_invariant|tolerance; empty: the op's default
};

class BenchCommand {
public:
  BenchCommand(CLI::App &parent, const GlobalOptions &global);
  CLI::App *app() const { return app_; }
  int run();

private:
  const GlobalOptions &global_;
  CLI::App *app_;
  BenchOptions options_;
};

} // namespace hone::cli

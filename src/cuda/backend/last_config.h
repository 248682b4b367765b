// LastConfig: the parsed kernel config of the last tactic a workload ran, so that run() parses
// a tactic once per change, not per launch.
//
//   LastConfig<GemvBf16Config> last_config_;
//   const GemvBf16Config &config = last_config_.of(tactic); // throws for a foreign tactic
#pragma once

#include "hone/tactic.h"

namespace hone::cuda {

// `Config::from_tactic(tactic)` throws Error(invalid_argument) for a tactic it cannot parse.
template <class Config> class LastConfig {
public:
  const Config &of(const Tactic &tactic) {
    if (!(tactic == tactic_)) {
      config_ = Config::from_tactic(tactic);
      tactic_ = tactic;
    }
    return config_;
  }

private:
  Tactic tactic_;
  Config config_;
};

} // namespace hone::cuda

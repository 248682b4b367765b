#include "cuda/kernels/common/chain_settings.h"

#include <atomic>

namespace hone::cuda {

namespace {
std::atomic<int> carveout{-1};
std::atomic<bool> early_trigger{false};
} // namespace

bool chain_early_trigger() { return early_trigger.load(std::memory_order_relaxed); }

bool set_chain_early_trigger(bool early) {
  return early_trigger.exchange(early, std::memory_order_relaxed);
}

int chain_shared_carveout() { return carveout.load(std::memory_order_relaxed); }

int set_chain_shared_carveout(int percent) {
  return carveout.exchange(percent < 0     ? -1
                           : percent > 100 ? 100
                                           : percent,
                           std::memory_order_relaxed);
}

} // namespace hone::cuda

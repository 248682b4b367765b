#include "cuda/kernels/common/chain_carveout.h"

#include <atomic>

namespace hone::cuda {

namespace {
std::atomic<int> carveout{-1};
} // namespace

int chain_shared_carveout() { return carveout.load(std::memory_order_relaxed); }

int set_chain_shared_carveout(int percent) {
  return carveout.exchange(percent < 0     ? -1
                           : percent > 100 ? 100
                                           : percent,
                           std::memory_order_relaxed);
}

} // namespace hone::cuda

// The L1 / shared-memory split that a chain's dependent launches ask for (a decode step's
// kernels under programmatic dependent launch). An SM changes its split only once the CTAs on it
// are gone, so a dependent launch whose kernel the driver runs at another split than the kernel
// before it cannot become resident beside that kernel, which is what the dependent launch is
// for; left to the driver, each kernel gets the split its own shared memory suggests, and a
// decode step's kernels ask for two or more (ncu, docs/benchmark_results/2026-12-07-4 call3).
// One split for the whole chain is a chain tactic (model::StepLaunch::shared_carveout).
#pragma once

namespace hone::cuda {

// The split every dependent launch asks for (cudaLaunchAttributePreferredSharedMemoryCarveout:
// the percent of the most shared memory an SM can have), or -1: none asked, each kernel's the
// driver's choice (the default). Process-wide; the launchers read it at each dependent launch.
int chain_shared_carveout();
// Sets it (0..100, or -1) and returns the value before. Not for concurrent chains with
// different splits: a decode step sets it around its own enqueue (ScopedChainCarveout).
int set_chain_shared_carveout(int percent);

// Sets the chain's split for the lifetime of the object, then puts the one before back.
class ScopedChainCarveout {
public:
  explicit ScopedChainCarveout(int percent) : before_(set_chain_shared_carveout(percent)) {}
  ~ScopedChainCarveout() { set_chain_shared_carveout(before_); }
  ScopedChainCarveout(const ScopedChainCarveout &) = delete;
  ScopedChainCarveout &operator=(const ScopedChainCarveout &) = delete;

private:
  int before_;
};

} // namespace hone::cuda

// Process-wide settings of a chain's dependent launches (a decode step's kernels under
// programmatic dependent launch), which the launchers read at each dependent launch; a decode
// step sets them around its own enqueue (model::StepLaunch). Not for concurrent chains with
// different settings.
//
// The L1 / shared-memory split: an SM changes its split only once the CTAs on it are gone, so a
// dependent launch whose kernel the driver runs at another split than the kernel before it cannot
// become resident beside that kernel; left to the driver, each kernel gets the split its own
// shared memory suggests, and a decode step's kernels ask for two or more (ncu,
// docs/benchmark_results/2026-12-07-4 call3). One split for the chain measured slower (call4):
// `hone step --carveout` keeps it as a measurement.
//
// The early trigger: rmsnorm, one CTA a few rows, waits for the linear before it and lets the
// linear after it start only after its own loads; triggering at its start lets that linear's
// CTAs issue their first weights while the norm still waits (a chain tactic, `early=1`).
// Not decode.paged's merge kernel: its triggering at its start too made the Llama-3.1-8B steps
// 14-21 % slower on an H100 (docs/notes/decode_step.md, last section).
#pragma once

#include <cuda_runtime.h>

namespace hone::cuda {

// The split every dependent launch asks for (cudaLaunchAttributePreferredSharedMemoryCarveout:
// the percent of the most shared memory an SM can have), or -1: none asked, each kernel's the
// driver's choice (the default).
int chain_shared_carveout();
// Sets it (0..100, or -1) and returns the value before.
int set_chain_shared_carveout(int percent);
// A dependent launch's attributes with the split appended where one is set: `attributes[count]`
// is written then (the array must have room); returns the new count.
inline unsigned add_chain_carveout(cudaLaunchAttribute *attributes, unsigned count) {
  const int carveout = chain_shared_carveout();
  if (carveout < 0)
    return count;
  attributes[count].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
  attributes[count].val.sharedMemCarveout = static_cast<unsigned>(carveout);
  return count + 1;
}

// Whether rmsnorm's dependent launches let the next kernel start at their own start
// (griddepcontrol.launch_dependents before their wait) instead of after their activation loads:
// the next kernel then issues its weights while the norm still waits. No bit changes (every kernel
// still waits for the one before to complete before it reads an activation).
bool chain_early_trigger();
// Sets it and returns the value before.
bool set_chain_early_trigger(bool early);

// Sets both for the lifetime of the object, then puts the ones before back.
class ScopedChainSettings {
public:
  ScopedChainSettings(int carveout, bool early_trigger)
      : carveout_(set_chain_shared_carveout(carveout)),
        early_trigger_(set_chain_early_trigger(early_trigger)) {}
  ~ScopedChainSettings() {
    set_chain_shared_carveout(carveout_);
    set_chain_early_trigger(early_trigger_);
  }
  ScopedChainSettings(const ScopedChainSettings &) = delete;
  ScopedChainSettings &operator=(const ScopedChainSettings &) = delete;

private:
  int carveout_;
  bool early_trigger_;
};

} // namespace hone::cuda

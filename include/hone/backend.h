// The seam between the backend-agnostic core and a device. A backend supplies device facts
// (which feed the cache metadata), a timer with a device sync, and an LLC flush.
//
//   hone::Backend &be = hone::cpu::backend();
//   be.timer().start(); run(); double s = be.timer().stop();   // [seconds], device synced
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace hone {

struct DeviceInfo {
  std::string backend;            // "cpu" or "cuda"
  std::string model;              // e.g. "AMD EPYC 7B13", "NVIDIA H200"; part of cache keys
  size_t llc_bytes = 0;           // [bytes] last-level cache (L3 on CPU, L2 on GPU)
  bool llc_known = true;          // false when llc_bytes is a fallback guess
  int compute_units = 0;          // hardware threads (cpu) or SMs (cuda)
  std::string compute_capability; // "9.0" on cuda; empty on cpu
  std::string runtime_version;    // e.g. "cudart 13000"; empty on cpu
  std::string driver_version;     // e.g. "580.159"; kernel release on cpu
  size_t memory_budget_bytes = 0; // [bytes] what rotating buffers may use
};

// (copy index) -> enqueue one launch reading input copy `copy`; never synchronises.
using LaunchFn = std::function<void(int copy)>;

class Timer {
public:
  virtual ~Timer() = default;
  // Marks the start of a timed region (after the device is idle).
  virtual void start() = 0;
  // [seconds] elapsed since start(); synchronises the device first.
  virtual double stop() = 0;
  // [seconds] smallest difference the timer can resolve.
  virtual double resolution() const = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual const DeviceInfo &info() const = 0;
  virtual Timer &timer() = 0;
  // Blocks until all queued device work is done.
  virtual void sync() = 0;
  // Evicts the last-level cache; called between samples, outside the timed region, when
  // rotation cannot cover kRotationLlcMultiple x the LLC within the memory budget.
  virtual void flush_llc() = 0;
  // Identifies how samples are timed (e.g. "cpu.steady_clock.v2", "cuda.graph.v3"); part
  // of the cache metadata.
  virtual std::string method_id() const = 0;
  // Hash of the compiled kernel sources of this backend; part of the cache metadata.
  virtual std::string kernel_build_id() const = 0;
  // [seconds] for `batch` launches as one timed region, cycling input copies starting at
  // *next_copy (advanced). Default: timer().start(), the launches, timer().stop(). A
  // backend may override it, e.g. to capture the launches in a CUDA graph outside the
  // timed region and time its replay (then method_id() says so).
  virtual double time_batch(const LaunchFn &launch, int batch, int copies, int *next_copy);
  // [bytes/second] achievable streaming-read bandwidth, measured by a probe; nullopt when
  // the backend has no probe. Later reports quote fractions of this figure.
  virtual std::optional<double> measure_read_bandwidth() { return std::nullopt; }
  // [bytes] device memory free for new allocations now (MemAvailable on cpu, cudaMemGetInfo's
  // free on cuda); nullopt when the backend cannot tell. Checked before a workload is prepared.
  virtual std::optional<size_t> available_memory_bytes() const { return std::nullopt; }
};

} // namespace hone

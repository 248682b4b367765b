// CudaBackend: the hone::Backend of one CUDA device. It owns a stream on which every hone
// launch, copy and timing event goes, an event timer on that stream, and the LLC-flush
// buffer. Samples are timed either as one replay of a CUDA graph of the batch (launch gaps
// hidden, "cuda.graph.v3") or as plain events around the enqueued launches
// ("cuda.events.v3"); HONE_TIMING=graph|events chooses, default graph.
//
//   hone::cuda::CudaBackend &be = hone::cuda::cuda_backend();
//   kernel<<<g, b, 0, be.stream()>>>(...);
//   be.sync();
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <cuda_runtime.h>

#include "cuda/backend/device_buffer.h"
#include "cuda/backend/event_timer.h"
#include "hone/backend.h"

namespace hone {
struct Settings;
}

namespace hone::cuda {

enum class TimingMethod { graph, events };

// Settings::timing (HONE_TIMING): "graph" (default when empty) or "events".
TimingMethod timing_method(const Settings &settings);
// timing_method() of a fresh read of the environment; throws Error(invalid_argument) naming
// a HONE_TIMING other than graph or events.
TimingMethod timing_method_from_env();
const char *method_id(TimingMethod method);

class CudaBackend final : public Backend {
public:
  CudaBackend(int device, TimingMethod timing);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  const DeviceInfo &info() const override { return info_; }
  Timer &timer() override { return *timer_; }
  void sync() override;
  // Writes a buffer of 2x the L2 bytes, then synchronises.
  void flush_llc() override;
  std::string method_id() const override { return cuda::method_id(timing_); }
  std::string kernel_build_id() const override;
  double time_batch(const LaunchFn &launch, int batch, int copies, int *next_copy) override;
  // Measured once (first call) and remembered.
  std::optional<double> measure_read_bandwidth() override;
  // cudaMemGetInfo's free bytes of this device.
  std::optional<size_t> available_memory_bytes() const override;

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  TimingMethod timing() const { return timing_; }

private:
  double time_graph(const LaunchFn &launch, int batch, int copies, int *next_copy);

  int device_;
  TimingMethod timing_;
  DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<EventTimer> timer_;
  DeviceBuffer flush_buffer_; // allocated at the first flush_llc()
  std::optional<double> read_bandwidth_;
};

// The process-wide backend (device 0) as its concrete type; throws Error(runtime) when no
// device is present.
CudaBackend &cuda_backend();

} // namespace hone::cuda

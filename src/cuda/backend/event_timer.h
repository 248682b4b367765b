// EventTimer: hone::Timer over a pair of CUDA events recorded on one stream. stop()
// synchronises on the end event, so the elapsed time covers exactly the device work
// enqueued on that stream between start() and stop().
//
//   hone::cuda::EventTimer timer(stream);
//   timer.start(); kernel<<<g, b, 0, stream>>>(); double s = timer.stop();  // [seconds]
#pragma once

#include <cuda_runtime.h>

#include "hone/backend.h"

namespace hone::cuda {

class EventTimer final : public Timer {
public:
  explicit EventTimer(cudaStream_t stream);
  ~EventTimer() override;
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;

  void start() override;
  double stop() override;
  // [seconds] cudaEventElapsedTime resolves about half a microsecond.
  double resolution() const override { return 0.5e-6; }

private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

} // namespace hone::cuda

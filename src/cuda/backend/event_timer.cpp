#include "cuda/backend/event_timer.h"

#include "cuda/backend/cuda_check.h"

namespace hone::cuda {

EventTimer::EventTimer(cudaStream_t stream) : stream_(stream) {
  HONE_CUDA_CHECK(cudaEventCreate(&start_));
  HONE_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  // NOTE: destructors do not throw; at process exit the runtime may already be unloaded.
  (void)cudaEventDestroy(start_);
  (void)cudaEventDestroy(stop_);
  (void)cudaGetLastError();
}

void EventTimer::start() { HONE_CUDA_CHECK(cudaEventRecord(start_, stream_)); }

double EventTimer::stop() {
  HONE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  HONE_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  HONE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

} // namespace hone::cuda

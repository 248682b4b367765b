#include "cuda/backend/read_bandwidth_probe.h"

#include <cstdint>
#include <vector>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/event_timer.h"
#include "hone/error.h"
#include "hone/stats.h"

namespace hone::cuda {

namespace {

constexpr int kProbeThreads = 512;
constexpr int kProbeBlocksPerSm = 4;
constexpr int kLoadsInFlight = 4; // independent 16-byte loads per thread per iteration

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// Reads src[0, count) once, grid-stride, kLoadsInFlight independent loads per iteration.
// NOTE: every value read feeds `acc`, and each warp's fold reaches `out` through an atomic,
// so the compiler cannot drop a load.
__global__ void __launch_bounds__(kProbeThreads)
    read_probe_kernel(const uint4 *__restrict__ src, size_t count, unsigned *out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + (kLoadsInFlight - 1) * stride < count; i += kLoadsInFlight * stride) {
    uint4 v[kLoadsInFlight];
#pragma unroll
    for (int j = 0; j < kLoadsInFlight; ++j)
      v[j] = src[i + j * stride];
#pragma unroll
    for (int j = 0; j < kLoadsInFlight; ++j)
      acc ^= fold(v[j]);
  }
  for (; i < count; i += stride)
    acc ^= fold(src[i]);
    // NOTE: all 32 lanes reach the shuffle (the loops above hold no barrier or shuffle).
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0)
    atomicXor(out, acc);
}

} // namespace

double run_read_bandwidth_probe(cudaStream_t stream, int sm_count,
                                const ReadProbeOptions &options) {
  HONE_CHECK(options.bytes >= sizeof(uint4) && options.timed_runs >= 1, "bad probe options");
  const size_t count = options.bytes / sizeof(uint4);
  const size_t bytes = count * sizeof(uint4);
  DeviceBuffer src(bytes);
  DeviceBuffer out(sizeof(unsigned));
  // A non-zero pattern: timing on zeros is not representative of real data.
  HONE_CUDA_CHECK(cudaMemsetAsync(src.data(), 0x5a, bytes, stream));
  HONE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, sizeof(unsigned), stream));

  const int blocks = std::max(sm_count, 1) * kProbeBlocksPerSm;
  const auto launch = [&] {
    read_probe_kernel<<<blocks, kProbeThreads, 0, stream>>>(src.as<const uint4>(), count,
                                                            out.as<unsigned>());
    HONE_CUDA_CHECK(cudaGetLastError());
  };
  for (int i = 0; i < options.warmup_runs; ++i)
    launch();
  EventTimer timer(stream);
  std::vector<double> rates;
  for (int i = 0; i < options.timed_runs; ++i) {
    timer.start();
    launch();
    const double seconds = timer.stop();
    if (seconds > 0)
      rates.push_back(static_cast<double>(bytes) / seconds);
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
  HONE_CHECK(!rates.empty(), "read bandwidth probe measured no time");
  return median(rates);
}

} // namespace hone::cuda

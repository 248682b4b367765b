#include "cuda/gate/count_bf16.h"

#include <algorithm>

#include "cuda/backend/cuda_check.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ bool bf16_nan(uint16_t v) {
  return (v & 0x7f80u) == 0x7f80u && (v & 0x007fu) != 0;
}

// Grid-stride over the elements; a warp sums its lanes' counts, one atomic a warp.
__global__ void count_bf16_kernel(const uint16_t *a, const uint16_t *b, size_t count,
                                  unsigned long long *out) {
  unsigned long long mine = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    mine += b ? (a[i] != b[i] ? 1u : 0u) : (bf16_nan(a[i]) ? 1u : 0u);
  for (int offset = 16; offset > 0; offset /= 2)
    mine += __shfl_down_sync(0xffffffffu, mine, offset);
  if ((threadIdx.x & 31) == 0 && mine != 0)
    atomicAdd(out, mine);
}

} // namespace

void add_count_bf16(const uint16_t *a, const uint16_t *b, size_t count, unsigned long long *out,
                    cudaStream_t stream) {
  if (count == 0)
    return;
  const int blocks = static_cast<int>(std::min<size_t>((count + kThreads - 1) / kThreads, 4096));
  count_bf16_kernel<<<blocks, kThreads, 0, stream>>>(a, b, count, out);
  HONE_CUDA_CHECK(cudaGetLastError());
}

uint64_t count_bf16(const uint16_t *a, const uint16_t *b, size_t count, const DeviceBuffer &counter,
                    cudaStream_t stream) {
  HONE_CHECK(counter.size() >= sizeof(unsigned long long), "count_bf16 needs an 8-byte counter");
  auto *out = counter.as<unsigned long long>();
  HONE_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(unsigned long long), stream));
  add_count_bf16(a, b, count, out, stream);
  unsigned long long host = 0;
  HONE_CUDA_CHECK(cudaMemcpyAsync(&host, out, sizeof(host), cudaMemcpyDeviceToHost, stream));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<uint64_t>(host);
}

} // namespace hone::cuda

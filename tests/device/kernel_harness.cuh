// Shared pieces of the standalone kernel harnesses (gemv_bf16_kernel_test.cu,
// qmv_affine_kernel_test.cu): checked CUDA calls, random bf16 fills, device memory, the
// relative L2 metric, CUDA-graph batches for timing and a streaming-read probe.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/bf16.h"
#include "hone/measurement.h"

namespace hone::cuda::harness {
namespace { // each harness is its own program; nothing here is shared across TUs

#define KT_CHECK(call)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

// Copies of `bytes` a cold batch cycles through: as the tuner's rotation_count, spanning
// kRotationLlcMultiple (8) x the L2 (`l2` bytes) between two uses of one copy. At 2 x part of a
// copy was still in L2 when it came round again (docs/benchmark_results/2026-12-06-h100-3,
// call9: gate_up's default read 15 % faster than at 8 or 32 x). Header-only, for the harnesses
// built on their own.
int cold_copies(size_t l2, size_t bytes) {
  return static_cast<int>(std::ceil(kRotationLlcMultiple * static_cast<double>(l2) /
                                    static_cast<double>(std::max<size_t>(bytes, 1)))) +
         1;
}

// Uniform in [-1, 1) with a non-zero, hash-derived bf16 per element.
__global__ void fill_random_kernel(uint16_t *p, size_t count, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    uint32_t bits = __float_as_uint(u == 0.0f ? 0.5f : u);
    p[i] = static_cast<uint16_t>(bits >> 16);
  }
}

void fill_random(void *p, size_t count, uint64_t seed) {
  fill_random_kernel<<<1024, 256>>>(static_cast<uint16_t *>(p), count, seed);
  KT_CHECK(cudaGetLastError());
}

uint64_t next_seed() {
  static uint64_t s = 0x1234567ull;
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s;
}

struct DeviceMem {
  void *p = nullptr;
  explicit DeviceMem(size_t bytes) { KT_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 16))); }
  ~DeviceMem() { (void)cudaFree(p); }
  DeviceMem(const DeviceMem &) = delete;
  DeviceMem &operator=(const DeviceMem &) = delete;
};

std::vector<uint16_t> download(const void *p, size_t count) {
  std::vector<uint16_t> out(count);
  KT_CHECK(cudaMemcpy(out.data(), p, count * 2, cudaMemcpyDeviceToHost));
  return out;
}

// Relative L2 error; NaN outputs (unwritten poison) make it infinite.
double relative_l2(const std::vector<uint16_t> &y, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (bf16_is_nan(y[i]))
      return INFINITY;
    const double d = bf16_to_float(y[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// One candidate's batch of launches as a CUDA graph (launch gaps hidden), cycling copies.
struct GraphBatch {
  cudaGraphExec_t exec{};
  GraphBatch(const std::function<void(int, cudaStream_t)> &fn, int batch, int copies,
             cudaStream_t s) {
    cudaGraph_t graph{};
    KT_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < batch; ++i)
      fn(i % copies, s);
    KT_CHECK(cudaStreamEndCapture(s, &graph));
    KT_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    KT_CHECK(cudaGraphDestroy(graph));
  }
  ~GraphBatch() { (void)cudaGraphExecDestroy(exec); }
  GraphBatch(const GraphBatch &) = delete;
  // [seconds] one replay.
  double time(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) const {
    KT_CHECK(cudaEventRecord(e0, s));
    KT_CHECK(cudaGraphLaunch(exec, s));
    KT_CHECK(cudaEventRecord(e1, s));
    KT_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    KT_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1e-3;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

__global__ void read_probe_kernel(const uint4 *p, size_t count, uint32_t *sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u)
    *sink = acc;
}

// 16-byte streaming load: L1 bypassed, 256-byte L2 prefetch, volatile so that a loads-only
// kernel keeps every load.
__device__ __forceinline__ uint4 ld_stream(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Loads-only read of `count` 16-byte words (the read_ceiling "stream" pattern: grid-stride,
// U loads in flight per thread, L1 bypassed, 256-byte L2 prefetch): the ceiling a kernel that
// reads the same bytes once is held to.
template <int U> __global__ void load_only_kernel(const uint4 *p, size_t count, uint32_t *sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  uint32_t acc = 0;
  for (; i + (U - 1) * stride < count; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; ++j)
      v[j] = ld_stream(p + i + j * stride);
#pragma unroll
    for (int j = 0; j < U; ++j)
      acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < count; i += stride) {
    const uint4 v = __ldg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) // keeps every load alive
    *sink = acc;
}

// Enqueues one loads-only read of `bytes` (a multiple of 16) at `p` with `ctas_per_sm` CTAs of
// 512 threads per SM.
void load_only(const void *p, size_t bytes, int ctas_per_sm, uint32_t *sink, cudaStream_t s) {
  static int sms = 0;
  if (sms == 0)
    KT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  load_only_kernel<4>
      <<<sms * ctas_per_sm, 512, 0, s>>>(static_cast<const uint4 *>(p), bytes / 16, sink);
  KT_CHECK(cudaGetLastError());
}

// [bytes/second] streaming read of 2 GiB, median of 5.
double measure_read_bandwidth(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  const size_t bytes = size_t{2} << 30;
  DeviceMem buf(bytes), sink(4);
  KT_CHECK(cudaMemsetAsync(buf.p, 1, bytes, s));
  int sms = 0;
  KT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    KT_CHECK(cudaEventRecord(e0, s));
    read_probe_kernel<<<sms * 8, 512, 0, s>>>(static_cast<const uint4 *>(buf.p), bytes / 16,
                                              static_cast<uint32_t *>(sink.p));
    KT_CHECK(cudaEventRecord(e1, s));
    KT_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    KT_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0)
      t.push_back(ms * 1e-3);
  }
  return static_cast<double>(bytes) / median(t);
}

// Comma-separated integers ("1,8,16") or NxK pairs ("4096x4096,14336x4096"), flattened.
std::vector<int> parse_list(const char *text) {
  std::vector<int> out;
  for (const char *q = text; *q;) {
    char *end = nullptr;
    out.push_back(static_cast<int>(std::strtol(q, &end, 10)));
    q = *end ? end + 1 : end;
  }
  return out;
}

} // namespace
} // namespace hone::cuda::harness

// Shared by the device tests of the small ops of a decode step (rmsnorm, rope, kv_append,
// silu_mul): fresh random host data, uploads, poisoned device outputs and downloads, all
// synchronous on the legacy stream.
//
//   std::vector<uint16_t> x = random_bf16(rows * hidden);   // new seed per call
//   DeviceBuffer dx = upload(x), dy = poisoned(x.size() * 2);
//   ... launch ...; std::vector<uint16_t> y = download_bf16(dy, x.size());
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"

namespace hone::cuda::testing {

// `count` bf16 values uniform in [-scale, scale), drawn from a fresh seed.
inline std::vector<uint16_t> random_bf16(size_t count, float scale = 1.0f) {
  std::mt19937_64 random(next_random_seed());
  std::uniform_real_distribution<float> value(-scale, scale);
  std::vector<uint16_t> out(count);
  for (uint16_t &v : out)
    v = float_to_bf16(value(random));
  return out;
}

template <class T> DeviceBuffer upload(const std::vector<T> &host) {
  DeviceBuffer d(host.size() * sizeof(T));
  HONE_CUDA_CHECK(cudaMemcpy(d.data(), host.data(), d.size(), cudaMemcpyHostToDevice));
  return d;
}

// `bytes` of device memory holding 0xff: bf16 NaN everywhere, so that an unwritten output
// shows.
inline DeviceBuffer poisoned(size_t bytes) {
  DeviceBuffer d(bytes);
  HONE_CUDA_CHECK(cudaMemset(d.data(), 0xff, bytes));
  return d;
}

// Waits for the device, then copies `count` bf16 values back.
inline std::vector<uint16_t> download_bf16(const DeviceBuffer &d, size_t count) {
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> out(count);
  HONE_CUDA_CHECK(
      cudaMemcpy(out.data(), d.data(), count * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  return out;
}

} // namespace hone::cuda::testing

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "hone/error.h"
#include "hone/ops/cuda.h"

namespace hone::cuda::testing {

// A kv_append of `batch` requests into the paged caches of a test (pages of `page_size`,
// `hkv` x `head_dim` per token): every field but k, v and their strides.
inline ops::cuda::KvAppendTensors
paged_append(DeviceBuffer &k_cache, DeviceBuffer &v_cache, const DeviceBuffer &indptr,
             const DeviceBuffer &indices, const DeviceBuffer &last, int batch, int num_pages,
             int hkv, int head_dim, int page_size, bool dependent) {
  ops::cuda::KvAppendTensors kv;
  kv.k_cache = k_cache.data();
  kv.v_cache = v_cache.data();
  kv.kv_indptr = indptr.as<const int32_t>();
  kv.kv_indices = indices.as<const int32_t>();
  kv.kv_last_page_len = last.as<const int32_t>();
  kv.batch = batch;
  kv.num_pages = num_pages;
  kv.hkv = hkv;
  kv.head_dim = head_dim;
  kv.page_size = page_size;
  kv.dependent = dependent;
  return kv;
}

// `call` must throw Error(invalid_argument) whose message contains `needle`.
inline void expect_invalid_call(const std::function<void()> &call, const std::string &needle) {
  try {
    call();
    ADD_FAILURE() << "expected invalid_argument naming " << needle;
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// silu_mul of a [rows, 2 inter] gate/up output into a poisoned buffer, downloaded: the separate
// launch that a gate/up linear's fused SiLU epilogue is held to.
inline std::vector<uint16_t> separate_silu_mul(const void *gate_up, int64_t rows, int64_t inter) {
  const size_t count = static_cast<size_t>(rows * inter);
  DeviceBuffer out = poisoned(count * 2);
  ops::cuda::SiluMulTensors t;
  t.gate_up = gate_up;
  t.out = out.data();
  t.rows = rows;
  t.inter = inter;
  ops::cuda::silu_mul(t, nullptr);
  return download_bf16(out, count);
}

} // namespace hone::cuda::testing

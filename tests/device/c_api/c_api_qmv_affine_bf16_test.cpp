// qmv.affine through the C ABI (libhone.so) on device pointers and a caller's stream: weights
// quantized on the host with hone_quantize_affine and copied to the device as they are; the
// output matches a float64 reference on the dequantised weights (hone_dequantize_affine),
// every element is written, and bad input is an error code naming the value. Linked against
// libhone.so only (plus cudart for the buffers), as a foreign runtime would be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

#define CHECK_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

// Nothing is recorded in the tuning cache from this program. Set before main(): the library
// reads its settings once, at its first call.
const bool cache_off = [] { return ::setenv("HONE_CACHE", "off", 1) == 0; }();

struct Case {
  int64_t rows, n, k;
  int32_t bits, group;
};

TEST(CApiQmvAffineBf16, MatchesTheReferenceOnTheCallersStream) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  ASSERT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  std::mt19937 rng(20261201);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // n off every tile; k not a multiple of 512; every bits and group.
  const std::vector<Case> cases = {{1, 1000, 1536, 4, 64},   {5, 1000, 1536, 4, 128},
                                   {16, 520, 1024, 4, 32},   {32, 1000, 1536, 4, 64},
                                   {1, 1000, 1536, 8, 64},   {8, 520, 1024, 8, 32},
                                   {24, 1000, 1536, 8, 128}, {32, 264, 2048, 8, 64}};
  for (const Case &c : cases) {
    SCOPED_TRACE("rows=" + std::to_string(c.rows) + " n=" + std::to_string(c.n) +
                 " k=" + std::to_string(c.k) + " bits=" + std::to_string(c.bits) +
                 " group=" + std::to_string(c.group));
    std::vector<float> w(c.n * c.k);
    for (float &v : w)
      v = u(rng);
    int64_t words = 0, groups = 0;
    ASSERT_EQ(hone_affine_sizes(c.n, c.k, c.bits, c.group, &words, &groups), HONE_OK);
    std::vector<uint32_t> q(words);
    std::vector<uint16_t> scales(groups), biases(groups);
    ASSERT_EQ(hone_quantize_affine(w.data(), c.n, c.k, c.bits, c.group, q.data(), scales.data(),
                                   biases.data()),
              HONE_OK)
        << hone_last_error();
    std::vector<float> wd(c.n * c.k);
    ASSERT_EQ(hone_dequantize_affine(q.data(), scales.data(), biases.data(), c.n, c.k, c.bits,
                                     c.group, wd.data()),
              HONE_OK);
    std::vector<uint16_t> x(c.rows * c.k), y(c.rows * c.n, 0xffffu); // y poisoned: NaN
    for (uint16_t &v : x)
      v = hone::float_to_bf16(u(rng));
    DeviceCopy dx(x), dq(q), ds(scales), db(biases), dy(y);
    ASSERT_EQ(hone_qmv_affine_bf16(dx.get(), static_cast<const uint32_t *>(dq.get()), ds.get(),
                                   db.get(), dy.get(), c.rows, c.n, c.k, c.bits, c.group, stream),
              HONE_OK)
        << hone_last_error();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    dy.to_host(y);
    double num = 0, den = 0;
    size_t unwritten = 0;
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t j = 0; j < c.n; ++j) {
        double ref = 0;
        for (int64_t i = 0; i < c.k; ++i)
          ref += double(hone::bf16_to_float(x[r * c.k + i])) * wd[j * c.k + i];
        const float got = hone::bf16_to_float(y[r * c.n + j]);
        unwritten += std::isnan(got) ? 1 : 0;
        num += (got - ref) * (got - ref);
        den += ref * ref;
      }
    EXPECT_EQ(unwritten, 0u);
    EXPECT_LT(std::sqrt(num / den), 8e-3);
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
}

TEST(CApiQmvAffineBf16, RunsOnTheLegacyStream) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  const int64_t rows = 2, n = 64, k = 128;
  std::vector<float> w(n * k, 0.25f); // a constant group: scale 0, every weight = bias
  std::vector<uint32_t> q(n * k * 4 / 32);
  std::vector<uint16_t> scales(n * k / 64), biases(n * k / 64);
  ASSERT_EQ(hone_quantize_affine(w.data(), n, k, 4, 64, q.data(), scales.data(), biases.data()),
            HONE_OK);
  std::vector<uint16_t> x(rows * k, hone::float_to_bf16(1.0f)), y(rows * n, 0xffffu);
  DeviceCopy dx(x), dq(q), ds(scales), db(biases), dy(y);
  ASSERT_EQ(hone_qmv_affine_bf16(dx.get(), static_cast<const uint32_t *>(dq.get()), ds.get(),
                                 db.get(), dy.get(), rows, n, k, 4, 64, nullptr),
            HONE_OK)
      << hone_last_error();
  CHECK_CUDA(cudaDeviceSynchronize());
  dy.to_host(y);
  for (uint16_t v : y)
    EXPECT_EQ(hone::bf16_to_float(v), 0.25f * k);
}

TEST(CApiQmvAffineBf16, BadInputNamesTheValue) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  alignas(16) static uint16_t dummy[256] = {};
  const auto *q = reinterpret_cast<const uint32_t *>(dummy);
  EXPECT_EQ(hone_qmv_affine_bf16(dummy, q, dummy, dummy, dummy, 1, 64, 100, 4, 64, nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("k=100"), std::string::npos) << hone_last_error();
  EXPECT_EQ(hone_qmv_affine_bf16(dummy, q, dummy, dummy, dummy, 40, 64, 128, 4, 64, nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("rows=40"), std::string::npos) << hone_last_error();
  EXPECT_EQ(hone_qmv_affine_bf16(dummy + 1, q, dummy, dummy, dummy, 1, 64, 128, 4, 64, nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("x="), std::string::npos) << hone_last_error();
}

TEST(CApiQmvAffineBf16, TuneResolvesToTheCudaOp) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  ASSERT_TRUE(cache_off);
  const int64_t dims[] = {1, 256, 512, 4, 64};
  char cuda_pick[256], cpu_pick[256];
  ASSERT_EQ(hone_tune("qmv.affine", dims, 5, nullptr, 0, cuda_pick, sizeof cuda_pick, nullptr),
            HONE_OK)
      << hone_last_error();
  ASSERT_EQ(hone_tune("qmv.affine", dims, 5, "f32", 0, cpu_pick, sizeof cpu_pick, nullptr), HONE_OK)
      << hone_last_error();
  // The CPU op's tactics carry rows_per_block; the CUDA op's do not.
  EXPECT_EQ(std::string(cuda_pick).find("rows_per_block="), std::string::npos) << cuda_pick;
  EXPECT_NE(std::string(cpu_pick).find("rows_per_block="), std::string::npos) << cpu_pick;
}

} // namespace

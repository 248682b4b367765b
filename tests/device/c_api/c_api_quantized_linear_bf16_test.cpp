// qmm.affine and quantized_linear through the C ABI (libhone.so) on device pointers and a
// caller's stream, on the one weight copy hone_quantize_affine makes (copied to the device as
// it is): the output matches a float64 reference on the dequantised weights at decode and
// prefill row counts, every element is written, quantized_linear equals qmv below its
// crossover and qmm above it, and bad input is an error code naming the value. Linked against
// libhone.so only (plus cudart for the buffers), as a foreign runtime would be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

#define CHECK_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

bool qmm_available() {
  if (!device_present())
    return false;
  char ops[2048];
  size_t length = 0;
  return hone_ops(ops, sizeof ops, &length) == HONE_OK &&
         std::string(ops).find("qmm.affine:cuda") != std::string::npos;
}

using Entry = hone_status (*)(const void *, const uint32_t *, const void *, const void *, void *,
                              int64_t, int64_t, int64_t, int32_t, int32_t, void *);

TEST(CApiQuantizedLinearBf16, MatchesTheReferenceAtEveryRowCount) {
  if (!qmm_available())
    GTEST_SKIP() << "no CUDA device, or a library without qmm.affine";
  ASSERT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  ASSERT_GE(hone_api_version() & 0xffffu, 3u);
  std::mt19937 rng(20261202);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int64_t n = 264, k = 1024; // n off every tile
  for (int32_t bits : {4, 8})
    for (int32_t group : {32, 128}) {
      std::vector<float> w(n * k);
      for (float &v : w)
        v = u(rng);
      int64_t words = 0, groups = 0;
      ASSERT_EQ(hone_affine_sizes(n, k, bits, group, &words, &groups), HONE_OK);
      std::vector<uint32_t> q(words);
      std::vector<uint16_t> scales(groups), biases(groups);
      ASSERT_EQ(
          hone_quantize_affine(w.data(), n, k, bits, group, q.data(), scales.data(), biases.data()),
          HONE_OK);
      std::vector<float> wd(n * k);
      ASSERT_EQ(hone_dequantize_affine(q.data(), scales.data(), biases.data(), n, k, bits, group,
                                       wd.data()),
                HONE_OK);
      DeviceCopy dq(q), ds(scales), db(biases);
      for (int64_t rows : {1, 7, 33, 300})
        for (Entry entry : {&hone_qmm_affine_bf16, &hone_quantized_linear_bf16}) {
          SCOPED_TRACE("rows=" + std::to_string(rows) + " bits=" + std::to_string(bits) +
                       " group=" + std::to_string(group) +
                       (entry == &hone_qmm_affine_bf16 ? " qmm" : " quantized_linear"));
          std::vector<uint16_t> x(rows * k), y(rows * n, 0xffffu); // y poisoned: NaN
          for (uint16_t &v : x)
            v = hone::float_to_bf16(u(rng));
          DeviceCopy dx(x), dy(y);
          ASSERT_EQ(entry(dx.get(), static_cast<const uint32_t *>(dq.get()), ds.get(), db.get(),
                          dy.get(), rows, n, k, bits, group, stream),
                    HONE_OK)
              << hone_last_error();
          CHECK_CUDA(cudaStreamSynchronize(stream));
          dy.to_host(y);
          double num = 0, den = 0;
          size_t unwritten = 0;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) {
              double ref = 0;
              for (int64_t i = 0; i < k; ++i)
                ref += double(hone::bf16_to_float(x[r * k + i])) * wd[j * k + i];
              const float got = hone::bf16_to_float(y[r * n + j]);
              unwritten += std::isnan(got) ? 1 : 0;
              num += (got - ref) * (got - ref);
              den += ref * ref;
            }
          EXPECT_EQ(unwritten, 0u);
          EXPECT_LT(std::sqrt(num / den), 8e-3);
        }
    }
  CHECK_CUDA(cudaStreamDestroy(stream));
}

TEST(CApiQuantizedLinearBf16, BadInputNamesTheValue) {
  if (!qmm_available())
    GTEST_SKIP() << "no CUDA device, or a library without qmm.affine";
  alignas(16) static uint16_t dummy[256] = {};
  const auto *q = reinterpret_cast<const uint32_t *>(dummy);
  for (Entry entry : {&hone_qmm_affine_bf16, &hone_quantized_linear_bf16}) {
    EXPECT_EQ(entry(dummy, q, dummy, dummy, dummy, 1, 64, 100, 4, 64, nullptr),
              HONE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hone_last_error()).find("k=100"), std::string::npos) << hone_last_error();
    EXPECT_EQ(entry(dummy, q, dummy, dummy, dummy, 16385, 64, 128, 4, 64, nullptr),
              HONE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hone_last_error()).find("rows=16385"), std::string::npos)
        << hone_last_error();
    EXPECT_EQ(entry(dummy, q, dummy, dummy, dummy, 1, 60, 128, 4, 64, nullptr),
              HONE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hone_last_error()).find("n=60"), std::string::npos) << hone_last_error();
    EXPECT_EQ(entry(dummy, q, dummy, dummy, dummy + 1, 1, 64, 128, 4, 64, nullptr),
              HONE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hone_last_error()).find("y="), std::string::npos) << hone_last_error();
  }
}

} // namespace

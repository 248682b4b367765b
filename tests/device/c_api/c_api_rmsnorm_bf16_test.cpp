// rmsnorm through the C ABI (libhone.so): the fused residual add on device pointers and a
// caller's stream matches a float64 reference with every element written; bad input is an
// error code naming the value.
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

TEST(CApiRmsnormBf16, FusedResidualMatchesTheReference) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  ASSERT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t rows = 3, hidden = 1536;
  std::vector<uint16_t> x(rows * hidden), r(rows * hidden), w(hidden);
  for (auto *v : {&x, &r, &w})
    for (auto &e : *v)
      e = hone::float_to_bf16(u(rng));
  const std::vector<uint16_t> poison(rows * hidden, 0xffffu);
  DeviceCopy dx(x), dr(r), dw(w), dout(poison), dres(poison);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(hone_rmsnorm_bf16(dx.get(), dr.get(), dres.get(), dw.get(), dout.get(), rows, hidden,
                              1e-6f, stream),
            HONE_OK)
      << hone_last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<uint16_t> out(poison), res(poison);
  dout.to_host(out);
  dres.to_host(res);
  double num = 0, den = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double squares = 0;
    for (int64_t j = 0; j < hidden; ++j) {
      const double h =
          double(hone::bf16_to_float(x[i * hidden + j])) + hone::bf16_to_float(r[i * hidden + j]);
      squares += h * h;
      EXPECT_NEAR(hone::bf16_to_float(res[i * hidden + j]), h, std::abs(h) / 128 + 1e-30);
    }
    const double rstd = 1 / std::sqrt(squares / hidden + 1e-6);
    for (int64_t j = 0; j < hidden; ++j) {
      const double h =
          double(hone::bf16_to_float(x[i * hidden + j])) + hone::bf16_to_float(r[i * hidden + j]);
      const double ref = h * rstd * hone::bf16_to_float(w[j]);
      const double got = hone::bf16_to_float(out[i * hidden + j]);
      ASSERT_FALSE(std::isnan(got)) << "unwritten " << i << "," << j;
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  }
  EXPECT_LE(std::sqrt(num / den), 8e-3);

  EXPECT_EQ(hone_rmsnorm_bf16(dx.get(), nullptr, nullptr, dw.get(), dout.get(), rows, 1001, 1e-6f,
                              stream),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("hidden=1001"), std::string::npos)
      << hone_last_error();
  EXPECT_EQ(hone_rmsnorm_bf16(dx.get(), dr.get(), nullptr, dw.get(), dout.get(), rows, hidden,
                              1e-6f, stream),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("residual_out"), std::string::npos)
      << hone_last_error();
  cudaStreamDestroy(stream);
}

} // namespace

// gemv.bf16 through the C ABI (libhone.so) on device pointers and a caller's stream: the
// output matches a float64 reference, every element is written, and bad input is an error
// code naming the value. Linked against libhone.so only (plus cudart for the buffers), as a
// foreign runtime would be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

#define CHECK_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

TEST(CApiGemvBf16, MatchesTheReferenceOnTheCallersStream) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  ASSERT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  std::mt19937 rng(20261130);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t rows : {1, 5, 16, 32}) {
    const int64_t n = 1000, k = 1032; // leftovers: n off the tile, k not a multiple of 128
    std::vector<uint16_t> x(rows * k), w(n * k), y(rows * n, 0xffffu);
    for (auto &v : x)
      v = hone::float_to_bf16(u(rng));
    for (auto &v : w)
      v = hone::float_to_bf16(u(rng));
    void *dx = nullptr, *dw = nullptr, *dy = nullptr;
    cudaStream_t stream = nullptr;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&dx, x.size() * 2));
    CHECK_CUDA(cudaMalloc(&dw, w.size() * 2));
    CHECK_CUDA(cudaMalloc(&dy, y.size() * 2));
    CHECK_CUDA(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dw, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dy, y.data(), y.size() * 2, cudaMemcpyHostToDevice)); // poison
    ASSERT_EQ(hone_gemv_bf16(dx, dw, dy, rows, n, k, stream), HONE_OK) << hone_last_error();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    size_t unwritten = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0;
        for (int64_t i = 0; i < k; ++i)
          ref += double(hone::bf16_to_float(x[r * k + i])) * hone::bf16_to_float(w[j * k + i]);
        const float got = hone::bf16_to_float(y[r * n + j]);
        unwritten += std::isnan(got) ? 1 : 0;
        num += (got - ref) * (got - ref);
        den += ref * ref;
      }
    EXPECT_EQ(unwritten, 0u) << "rows=" << rows;
    EXPECT_LT(std::sqrt(num / den), 8e-3) << "rows=" << rows;
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaStreamDestroy(stream);
  }
}

TEST(CApiGemvBf16, BadShapeNamesTheValue) {
  uint16_t dummy[64] = {};
  EXPECT_EQ(hone_gemv_bf16(dummy, dummy, dummy, 1, 64, 100, nullptr), HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("100"), std::string::npos) << hone_last_error();
}

} // namespace

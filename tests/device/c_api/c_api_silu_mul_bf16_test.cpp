// silu_mul through the C ABI (libhone.so): the fused gate/up form and the two-tensor form give
// the same bits and match a float64 reference; bad input is an error code naming the value.
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

TEST(CApiSiluMulBf16, FusedAndSplitMatchTheReference) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-6.0f, 6.0f);
  const int64_t rows = 4, inter = 8960;
  std::vector<uint16_t> gate(rows * inter), up(rows * inter), fused;
  for (auto *v : {&gate, &up})
    for (auto &e : *v)
      e = hone::float_to_bf16(u(rng));
  for (int64_t r = 0; r < rows; ++r) {
    fused.insert(fused.end(), gate.begin() + r * inter, gate.begin() + (r + 1) * inter);
    fused.insert(fused.end(), up.begin() + r * inter, up.begin() + (r + 1) * inter);
  }
  const std::vector<uint16_t> poison(rows * inter, 0xffffu);
  DeviceCopy dg(gate), du(up), df(fused), d1(poison), d2(poison);
  ASSERT_EQ(hone_silu_mul_bf16(df.get(), nullptr, d1.get(), rows, inter, nullptr), HONE_OK)
      << hone_last_error();
  ASSERT_EQ(hone_silu_mul_bf16(dg.get(), du.get(), d2.get(), rows, inter, nullptr), HONE_OK)
      << hone_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> y1(poison), y2(poison);
  d1.to_host(y1);
  d2.to_host(y2);
  EXPECT_EQ(y1, y2);
  double num = 0, den = 0;
  for (size_t i = 0; i < y1.size(); ++i) {
    const double g = hone::bf16_to_float(gate[i]), v = hone::bf16_to_float(up[i]);
    const double ref = g / (1 + std::exp(-g)) * v, got = hone::bf16_to_float(y1[i]);
    ASSERT_FALSE(std::isnan(got)) << "unwritten " << i;
    num += (got - ref) * (got - ref);
    den += ref * ref;
  }
  EXPECT_LE(std::sqrt(num / den), 4e-3);
  EXPECT_EQ(hone_silu_mul_bf16(df.get(), nullptr, d1.get(), rows, 8961, nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("inter=8961"), std::string::npos)
      << hone_last_error();
}

} // namespace

// rope through the C ABI (libhone.so): in place on q and k with Llama-3.1 scaling matches a
// float64 reference (the scaled frequencies computed here, as transformers does); bad input is
// an error code naming the value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

double llama3_inv_freq(int i, int head_dim) {
  const double base = std::pow(500000.0, -2.0 * i / head_dim);
  const double wavelen = 2 * std::numbers::pi / base;
  if (wavelen < 8192.0 / 4)
    return base;
  if (wavelen > 8192.0)
    return base / 8;
  const double smooth = (8192.0 / wavelen - 1) / 3;
  return (1 - smooth) * base / 8 + smooth * base;
}

TEST(CApiRopeBf16, InPlaceLlama3MatchesTheReference) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t rows = 3, hq = 4, hkv = 2, d = 128;
  std::vector<uint16_t> q(rows * hq * d), k(rows * hkv * d);
  for (auto *v : {&q, &k})
    for (auto &e : *v)
      e = hone::float_to_bf16(u(rng));
  const std::vector<int32_t> positions{7, 9000, 100000};
  DeviceCopy dq(q), dk(k), dp(positions);
  const double scaling[4] = {8.0, 1.0, 4.0, 8192.0};
  ASSERT_EQ(hone_rope_bf16(dq.get(), dk.get(), dp.as<int32_t>(), rows, hq, hkv, d, 0, 0, 500000.0,
                           scaling, nullptr),
            HONE_OK)
      << hone_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> yq(q.size()), yk(k.size());
  dq.to_host(yq);
  dk.to_host(yk);
  double num = 0, den = 0;
  for (auto [x, y, heads] : {std::tuple{&q, &yq, hq}, std::tuple{&k, &yk, hkv}})
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int i = 0; i < d / 2; ++i) {
          const size_t at = static_cast<size_t>((r * heads + h) * d + i);
          const double a = positions[static_cast<size_t>(r)] * llama3_inv_freq(i, d);
          const double x1 = hone::bf16_to_float((*x)[at]),
                       x2 = hone::bf16_to_float((*x)[at + d / 2]);
          const double r1 = x1 * std::cos(a) - x2 * std::sin(a),
                       r2 = x2 * std::cos(a) + x1 * std::sin(a);
          const double g1 = hone::bf16_to_float((*y)[at]),
                       g2 = hone::bf16_to_float((*y)[at + d / 2]);
          num += (g1 - r1) * (g1 - r1) + (g2 - r2) * (g2 - r2);
          den += r1 * r1 + r2 * r2;
        }
  EXPECT_LE(std::sqrt(num / den), 4e-3);
  EXPECT_EQ(hone_rope_bf16(dq.get(), dk.get(), dp.as<int32_t>(), rows, hq, hkv, 100, 0, 0, 10000.0,
                           nullptr, nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("head_dim=100"), std::string::npos)
      << hone_last_error();
  EXPECT_EQ(hone_rope_bf16(dq.get(), dk.get(), nullptr, rows, hq, hkv, d, 0, 0, 10000.0, nullptr,
                           nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("positions"), std::string::npos)
      << hone_last_error();
}

} // namespace

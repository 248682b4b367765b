// rope with the K/V append (and Qwen2's q/k/v bias) in one launch through the C ABI
// (libhone.so): bit for bit the bias add, hone_rope_bf16 and hone_kv_append_bf16 one after
// another, on fresh random inputs; k itself is left as it was; a bad page table is an error code
// naming the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

constexpr int64_t kBatch = 3, kHq = 8, kHkv = 2, kD = 128, kPage = 16, kPages = 8;

// bf16(x + b) in fp32, one rounding: the separate bias add's bits.
void add_bias(std::vector<uint16_t> &x, const std::vector<uint16_t> &bias, int64_t heads,
              int64_t first_head) {
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t in_row = i % static_cast<size_t>(heads * kD);
    x[i] = hone::float_to_bf16(hone::bf16_to_float(x[i]) +
                               hone::bf16_to_float(bias[first_head * kD + in_row]));
  }
}

void fused_equals_separate(bool with_bias) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto fill = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (auto &e : v)
      e = hone::float_to_bf16(u(rng));
    return v;
  };
  const std::vector<uint16_t> q = fill(kBatch * kHq * kD), k = fill(kBatch * kHkv * kD),
                              v = fill(kBatch * kHkv * kD),
                              cache = fill(kPages * kPage * kHkv * kD),
                              bias = fill((kHq + 2 * kHkv) * kD);
  const std::vector<int32_t> positions{5, 4000, 17};
  // Requests of 17, 1 and 32 tokens (the new one included) on pages {5, 2}, {7}, {0, 3}.
  const std::vector<int32_t> indptr{0, 2, 3, 5}, indices{5, 2, 7, 0, 3}, last{1, 1, 16};
  const double scaling[4] = {8.0, 1.0, 4.0, 8192.0};

  // Separate: the bias added on the host, then rope, then kv_append.
  std::vector<uint16_t> q_sep = q, k_sep = k, v_sep = v;
  if (with_bias) {
    add_bias(q_sep, bias, kHq, 0);
    add_bias(k_sep, bias, kHkv, kHq);
    add_bias(v_sep, bias, kHkv, kHq + kHkv);
  }
  DeviceCopy dq_sep(q_sep), dk_sep(k_sep), dv_sep(v_sep), kc_sep(cache), vc_sep(cache),
      dp(positions), di(indptr), dx(indices), dl(last);
  ASSERT_EQ(hone_rope_bf16(dq_sep.get(), dk_sep.get(), dp.as<int32_t>(), kBatch, kHq, kHkv, kD, 0,
                           0, 500000.0, scaling, nullptr),
            HONE_OK)
      << hone_last_error();
  ASSERT_EQ(hone_kv_append_bf16(dk_sep.get(), dv_sep.get(), kc_sep.get(), vc_sep.get(),
                                di.as<int32_t>(), dx.as<int32_t>(), dl.as<int32_t>(), indptr.data(),
                                last.data(), kBatch, kPages, kHkv, kD, kPage, 0, 0, nullptr),
            HONE_OK)
      << hone_last_error();

  // Fused, on the raw q, k, v.
  DeviceCopy dq(q), dk(k), dv(v), kc(cache), vc(cache), db(bias);
  ASSERT_EQ(hone_rope_kv_append_bf16(dq.get(), dk.get(), dv.get(), with_bias ? db.get() : nullptr,
                                     kc.get(), vc.get(), dp.as<int32_t>(), di.as<int32_t>(),
                                     dx.as<int32_t>(), dl.as<int32_t>(), indptr.data(), last.data(),
                                     kBatch, kPages, kHq, kHkv, kD, kPage, 0, 0, 0, 500000.0,
                                     scaling, nullptr),
            HONE_OK)
      << hone_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const auto host = [](const DeviceCopy &d, size_t n) {
    std::vector<uint16_t> out(n);
    d.to_host(out);
    return out;
  };
  EXPECT_EQ(host(dq, q.size()), host(dq_sep, q.size())) << "q";
  EXPECT_EQ(host(kc, cache.size()), host(kc_sep, cache.size())) << "k cache";
  EXPECT_EQ(host(vc, cache.size()), host(vc_sep, cache.size())) << "v cache";
  EXPECT_EQ(host(dk, k.size()), k) << "k is an input of the fused launch, not written";
  EXPECT_EQ(host(dv, v.size()), v) << "v is an input, not written";
  // Something moved: the new slots hold the roped k, not what the cache held.
  EXPECT_NE(host(kc, cache.size()), cache);

  const std::vector<int32_t> bad_last{1, 17, 16};
  EXPECT_EQ(hone_rope_kv_append_bf16(dq.get(), dk.get(), dv.get(), nullptr, kc.get(), vc.get(),
                                     dp.as<int32_t>(), di.as<int32_t>(), dx.as<int32_t>(),
                                     dl.as<int32_t>(), indptr.data(), bad_last.data(), kBatch,
                                     kPages, kHq, kHkv, kD, kPage, 0, 0, 0, 500000.0, scaling,
                                     nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("kv_last_page_len[1]=17"), std::string::npos)
      << hone_last_error();
}

TEST(CApiRopeKvAppendBf16, IsTheSeparateLaunchesBitForBit) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  fused_equals_separate(false);
}

TEST(CApiRopeKvAppendBf16, WithTheQkvBiasIsTheSeparateBiasAddRopeAndAppend) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  fused_equals_separate(true);
}

} // namespace

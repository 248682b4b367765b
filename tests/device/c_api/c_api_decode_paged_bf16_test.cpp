// decode.paged through the C ABI (libhone.so) on device pointers and a caller's stream: a
// ragged batch in shuffled pages, the output and lse against a float64 reference computed
// here, every element written, and bad input an error code naming the value. Linked against
// libhone.so only (plus cudart for the buffers), as a foreign runtime would be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

#define CHECK_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

struct Case {
  int hq, hkv, head_dim, page_size;
  std::vector<int32_t> lengths;
};

TEST(CApiDecodePagedBf16, MatchesTheReferenceOnTheCallersStream) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  ASSERT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  ASSERT_GE(hone_api_version() & 0xffffu, 2u);
  std::mt19937 rng(20261212);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<Case> cases = {{32, 8, 128, 16, {1, 16, 17, 2000}},
                                   {28, 4, 64, 32, {700, 33}},
                                   {8, 8, 256, 64, {64, 65, 5000}}};
  for (const Case &c : cases) {
    SCOPED_TRACE("hq=" + std::to_string(c.hq) + " hkv=" + std::to_string(c.hkv) + " head_dim=" +
                 std::to_string(c.head_dim) + " page_size=" + std::to_string(c.page_size));
    const int batch = static_cast<int>(c.lengths.size()), d = c.head_dim, ps = c.page_size;
    const int group = c.hq / c.hkv;
    std::vector<int32_t> indptr{0}, last;
    for (int32_t len : c.lengths) {
      const int32_t pages = (len + ps - 1) / ps;
      indptr.push_back(indptr.back() + pages);
      last.push_back(len - (pages - 1) * ps);
    }
    const int num_pages = indptr.back() + 3; // three pages no request uses
    std::vector<int32_t> indices(static_cast<size_t>(indptr.back()));
    std::iota(indices.begin(), indices.end(), 3);
    std::shuffle(indices.begin(), indices.end(), rng);
    const size_t cache = static_cast<size_t>(num_pages) * ps * c.hkv * d;
    std::vector<uint16_t> q(static_cast<size_t>(batch) * c.hq * d), k(cache), v(cache);
    for (auto *a : {&q, &k, &v})
      for (uint16_t &x : *a)
        x = hone::float_to_bf16(u(rng));
    std::vector<uint16_t> o(q.size(), 0xffffu); // poisoned: NaN
    std::vector<float> lse(static_cast<size_t>(batch) * c.hq, NAN);
    DeviceCopy dq(q), dk(k), dv(v), di(indptr), dx(indices), dl(last), d_o(o), dlse(lse);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    ASSERT_EQ(hone_decode_paged_bf16(dq.get(), dk.get(), dv.get(), di.as<int32_t>(),
                                     dx.as<int32_t>(), dl.as<int32_t>(), indptr.data(), last.data(),
                                     d_o.get(), static_cast<float *>(dlse.get()), batch, num_pages,
                                     c.hq, c.hkv, d, ps, scale, stream),
              HONE_OK)
        << hone_last_error();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    d_o.to_host(o);
    dlse.to_host(lse);

    double num = 0, den = 0, lse_error = 0;
    size_t unwritten = 0;
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < c.hq; ++h) {
        const int hk = h / group, len = c.lengths[static_cast<size_t>(b)];
        const auto row = [&](const std::vector<uint16_t> &cache_, int t) {
          const int page = indices[static_cast<size_t>(indptr[static_cast<size_t>(b)] + t / ps)];
          return &cache_[((static_cast<size_t>(page) * ps + t % ps) * c.hkv + hk) * d];
        };
        const uint16_t *qr = &q[(static_cast<size_t>(b) * c.hq + h) * d];
        std::vector<double> s(static_cast<size_t>(len));
        for (int t = 0; t < len; ++t) {
          double dot = 0;
          for (int i = 0; i < d; ++i)
            dot += double(hone::bf16_to_float(qr[i])) * hone::bf16_to_float(row(k, t)[i]);
          s[static_cast<size_t>(t)] = scale * dot;
        }
        const double m = *std::max_element(s.begin(), s.end());
        double sum = 0;
        std::vector<double> acc(static_cast<size_t>(d), 0.0);
        for (int t = 0; t < len; ++t) {
          const double w = std::exp(s[static_cast<size_t>(t)] - m);
          sum += w;
          for (int i = 0; i < d; ++i)
            acc[static_cast<size_t>(i)] += w * hone::bf16_to_float(row(v, t)[i]);
        }
        for (int i = 0; i < d; ++i) {
          const double ref = acc[static_cast<size_t>(i)] / sum;
          const float got = hone::bf16_to_float(o[(static_cast<size_t>(b) * c.hq + h) * d + i]);
          unwritten += std::isnan(got) ? 1 : 0;
          num += (got - ref) * (got - ref);
          den += ref * ref;
        }
        lse_error = std::max(
            lse_error, std::abs(lse[static_cast<size_t>(b) * c.hq + h] - (m + std::log(sum))));
      }
    EXPECT_EQ(unwritten, 0u);
    EXPECT_LT(std::sqrt(num / den), 8e-3);
    EXPECT_LT(lse_error, 8e-3); // also catches an unwritten (NaN) lse: NaN < x is false
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
}

TEST(CApiDecodePagedBf16, BadInputNamesTheValue) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  alignas(16) static uint16_t dummy[256] = {};
  const std::vector<int32_t> indptr{0, 2, 3}, last{16, 5};
  const auto call = [&](const void *o, const int32_t *ip, const int32_t *lp, int64_t hq,
                        int64_t hkv, int64_t d, int64_t ps) {
    return hone_decode_paged_bf16(dummy, dummy, dummy, indptr.data(), indptr.data(), last.data(),
                                  ip, lp, const_cast<void *>(o), nullptr, 2, 4, hq, hkv, d, ps,
                                  0.1f, nullptr);
  };
  const auto expect_error = [](hone_status s, const std::string &needle) {
    EXPECT_EQ(s, HONE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hone_last_error()).find(needle), std::string::npos) << hone_last_error();
  };
  expect_error(call(dummy, indptr.data(), last.data(), 30, 8, 128, 16),
               "hq=30 is not a multiple of hkv=8");
  expect_error(call(dummy, indptr.data(), last.data(), 32, 8, 80, 16), "head_dim=80");
  expect_error(call(dummy, indptr.data(), last.data(), 32, 8, 128, 8), "page_size=8");
  const std::vector<int32_t> empty{0, 2, 2}, falling{0, 3, 2}, bad_last{16, 17};
  expect_error(call(dummy, empty.data(), last.data(), 32, 8, 128, 16), "request 1 has length 0");
  expect_error(call(dummy, falling.data(), last.data(), 32, 8, 128, 16),
               "kv_indptr is not monotone");
  expect_error(call(dummy, indptr.data(), bad_last.data(), 32, 8, 128, 16),
               "kv_last_page_len[1]=17");
  expect_error(call(dummy + 1, indptr.data(), last.data(), 32, 8, 128, 16), "o=");
  expect_error(call(dummy, nullptr, last.data(), 32, 8, 128, 16), "kv_indptr_host is NULL");
}

} // namespace

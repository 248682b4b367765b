// kv_append through the C ABI (libhone.so): the new tokens land in their slots of a shuffled
// page pool and nothing else changes; a bad page table is an error code naming the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "c_api_test_util.h"
#include "hone/bf16.h"
#include "hone/hone.h"

namespace {

TEST(CApiKvAppendBf16, WritesTheNewSlotsOnly) {
  if (!device_present())
    GTEST_SKIP() << "no CUDA device present";
  std::mt19937 rng(std::random_device{}());
  const int64_t batch = 3, hkv = 2, d = 128, page_size = 16, num_pages = 8;
  const int64_t token = hkv * d;
  std::vector<uint16_t> cache(num_pages * page_size * token), k(batch * token), v(batch * token);
  for (auto *x : {&cache, &k, &v})
    for (auto &e : *x)
      e = static_cast<uint16_t>(rng() & 0x3fffu); // finite bf16 patterns
  // Requests of 17, 1 and 32 tokens on pages {5, 2}, {7}, {0, 3}.
  const std::vector<int32_t> indptr{0, 2, 3, 5}, indices{5, 2, 7, 0, 3}, last{1, 1, 16};
  DeviceCopy dk(k), dv(v), kc(cache), vc(cache), di(indptr), dx(indices), dl(last);
  ASSERT_EQ(hone_kv_append_bf16(dk.get(), dv.get(), kc.get(), vc.get(), di.as<int32_t>(),
                                dx.as<int32_t>(), dl.as<int32_t>(), indptr.data(), last.data(),
                                batch, num_pages, hkv, d, page_size, 0, 0, nullptr),
            HONE_OK)
      << hone_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> got_k(cache.size()), got_v(cache.size());
  kc.to_host(got_k);
  vc.to_host(got_v);
  std::vector<uint16_t> want_k = cache, want_v = cache;
  const int64_t slots[3] = {2 * page_size + 0, 7 * page_size + 0, 3 * page_size + 15};
  for (int64_t b = 0; b < batch; ++b) {
    std::copy_n(k.begin() + b * token, token, want_k.begin() + slots[b] * token);
    std::copy_n(v.begin() + b * token, token, want_v.begin() + slots[b] * token);
  }
  EXPECT_EQ(got_k, want_k);
  EXPECT_EQ(got_v, want_v);

  const std::vector<int32_t> bad_last{1, 17, 16};
  EXPECT_EQ(hone_kv_append_bf16(dk.get(), dv.get(), kc.get(), vc.get(), di.as<int32_t>(),
                                dx.as<int32_t>(), dl.as<int32_t>(), indptr.data(), bad_last.data(),
                                batch, num_pages, hkv, d, page_size, 0, 0, nullptr),
            HONE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hone_last_error()).find("kv_last_page_len[1]=17"), std::string::npos)
      << hone_last_error();
}

} // namespace

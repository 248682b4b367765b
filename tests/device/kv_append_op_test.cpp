// kv_append (cuda): every tactic through the gate (bit for bit); the entry point on a shuffled
// page pool of real requests, K and V slices of a fused q/k/v output, as a dependent launch:
// exactly the new slots change; bad input named.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend/random_fill.h"
#include "cuda/kernels/kv_append/kv_append.h"
#include "cuda/ops/kv_append_op.h"
#include "device_test.h"
#include "hone/ops/cuda.h"
#include "op_test_helpers.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::check_every_tactic;
using testing::DeviceTest;
using testing::download_bf16;
using testing::expect_default_first_and_distinct;
using testing::expect_invalid;
using testing::expect_invalid_call;
using testing::random_bf16;
using testing::reduced_shapes;
using testing::registered_op;
using testing::upload;

Shape shape_of(int batch, int hkv, int head_dim, int page_size) {
  return Shape{{batch, hkv, head_dim, page_size}, DType::bf16};
}

const TunableOp &kv_append_op() { return registered_op("kv_append"); }

TEST(KvAppendOpHostTest, OpIdentityBucketsAndCandidates) {
  const TunableOp &op = kv_append_op();
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.default_numerics(), Numerics::tolerance);
  const Shape b = op.buckets().map(shape_of(12, 8, 128, 16)).value();
  EXPECT_EQ(op.buckets().describe(b), "batch=16,hkv=8,head_dim=128,page_size=16");
  const std::vector<Tactic> c = op.candidates(b);
  ASSERT_GT(c.size(), 2u);
  expect_default_first_and_distinct(c, op.default_tactic(b));
}

TEST(KvAppendOpHostTest, GateTableCoversTheSlotsOnce) {
  for (int page_size : {1, 16}) {
    const KvAppendGateTable t = kv_append_gate_table(37, page_size);
    ASSERT_EQ(t.indptr.size(), 38u);
    for (int b = 0; b < 37; ++b) {
      ASSERT_LT(t.indptr[b], t.indptr[b + 1]);
      EXPECT_EQ(t.indices[static_cast<size_t>(t.indptr[b + 1] - 1)], b / page_size);
      EXPECT_EQ(t.last_page_len[static_cast<size_t>(b)], b % page_size + 1);
    }
    for (int32_t page : t.indices) {
      EXPECT_GE(page, 0);
      EXPECT_LT(page, t.num_pages);
    }
  }
}

TEST(KvAppendOpHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = kv_append_op();
  expect_invalid(op, shape_of(4, 8, 100, 16), "head_dim=100");
  expect_invalid(op, shape_of(0, 8, 128, 16), "batch=0");
  expect_invalid(op, shape_of(4, 0, 128, 16), "hkv=0");
  expect_invalid(op, shape_of(4, 8, 128, 0), "page_size=0");
}

class KvAppendOpTest : public DeviceTest {};

TEST_F(KvAppendOpTest, EveryTacticWritesTheExactBits) {
  const std::vector<int> batches =
      reduced_shapes() ? std::vector<int>{1, 19} : std::vector<int>{1, 5, 16, 19, 130};
  for (int b : batches)
    for (const auto &[hkv, d, ps] : {std::tuple{8, 128, 16}, std::tuple{2, 64, 32},
                                     std::tuple{1, 8, 1}, std::tuple{4, 256, 64}})
      EXPECT_GT(
          check_every_tactic(kv_append_op(), shape_of(b, hkv, d, ps), kKvAppendRelativeL2Bound), 0);
}

TEST_F(KvAppendOpTest, EntryPointWritesOnlyTheNewSlots) {
  const int batch = 6, hq = 4, hkv = 2, head_dim = 64, page_size = 16, num_pages = 40;
  std::mt19937 random(static_cast<uint32_t>(next_random_seed()));
  // Requests of 1 .. 40 tokens (counting the new one) on shuffled pages.
  std::vector<int32_t> pool(num_pages);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), random);
  std::vector<int32_t> indptr{0}, indices, last;
  for (int b = 0; b < batch; ++b) {
    const int len = 1 + static_cast<int>(random() % 40);
    const int pages = (len + page_size - 1) / page_size;
    for (int p = 0; p < pages; ++p)
      indices.push_back(pool[indices.size()]);
    indptr.push_back(static_cast<int32_t>(indices.size()));
    last.push_back(len - (pages - 1) * page_size);
  }
  const size_t token = static_cast<size_t>(hkv) * head_dim;
  const size_t cache_elements = static_cast<size_t>(num_pages) * page_size * token;
  const std::vector<uint16_t> k_cache = random_bf16(cache_elements),
                              v_cache = random_bf16(cache_elements);
  // K and V as slices of a fused q/k/v projection output [batch, (hq + 2 hkv) x head_dim].
  const int64_t row = static_cast<int64_t>(hq + 2 * hkv) * head_dim;
  const std::vector<uint16_t> qkv = random_bf16(static_cast<size_t>(batch * row));
  DeviceBuffer dk = upload(k_cache), dv = upload(v_cache), dqkv = upload(qkv);
  DeviceBuffer dindptr = upload(indptr), dindices = upload(indices), dlast = upload(last);

  ops::cuda::KvAppendTensors t;
  t.k = static_cast<const uint16_t *>(dqkv.data()) + hq * head_dim;
  t.v = static_cast<const uint16_t *>(dqkv.data()) + (hq + hkv) * head_dim;
  t.k_stride = t.v_stride = row;
  t.k_cache = dk.data();
  t.v_cache = dv.data();
  t.kv_indptr = dindptr.as<const int32_t>();
  t.kv_indices = dindices.as<const int32_t>();
  t.kv_last_page_len = dlast.as<const int32_t>();
  t.kv_indptr_host = indptr.data();
  t.kv_last_page_len_host = last.data();
  t.batch = batch;
  t.num_pages = num_pages;
  t.hkv = hkv;
  t.head_dim = head_dim;
  t.page_size = page_size;
  t.dependent = true;
  ops::cuda::kv_append(t, nullptr);

  std::vector<uint16_t> k_want = k_cache, v_want = v_cache;
  for (int b = 0; b < batch; ++b) {
    const size_t page = static_cast<size_t>(indices[static_cast<size_t>(indptr[b + 1] - 1)]);
    const size_t slot = static_cast<size_t>(last[static_cast<size_t>(b)] - 1);
    const size_t dst = (page * page_size + slot) * token;
    const size_t src = static_cast<size_t>(b * row);
    std::copy_n(qkv.begin() + static_cast<std::ptrdiff_t>(src + hq * head_dim), token,
                k_want.begin() + static_cast<std::ptrdiff_t>(dst));
    std::copy_n(qkv.begin() + static_cast<std::ptrdiff_t>(src + (hq + hkv) * head_dim), token,
                v_want.begin() + static_cast<std::ptrdiff_t>(dst));
  }
  EXPECT_EQ(download_bf16(dk, cache_elements), k_want);
  EXPECT_EQ(download_bf16(dv, cache_elements), v_want);
}

TEST_F(KvAppendOpTest, EntryPointNamesBadInput) {
  const int hkv = 2, head_dim = 64, page_size = 16;
  const std::vector<int32_t> indptr{0, 1, 3}, indices{0, 1, 2}, last{1, 16};
  const std::vector<uint16_t> kv = random_bf16(2 * hkv * head_dim);
  DeviceBuffer k = upload(kv), cache = upload(random_bf16(4 * page_size * hkv * head_dim));
  DeviceBuffer dindptr = upload(indptr), dindices = upload(indices), dlast = upload(last);
  ops::cuda::KvAppendTensors t;
  t.k = t.v = k.data();
  t.k_cache = t.v_cache = cache.data();
  t.kv_indptr = dindptr.as<const int32_t>();
  t.kv_indices = dindices.as<const int32_t>();
  t.kv_last_page_len = dlast.as<const int32_t>();
  t.batch = 2;
  t.num_pages = 4;
  t.hkv = hkv;
  t.head_dim = head_dim;
  t.page_size = page_size;
  auto bad = t;
  bad.k = nullptr;
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "k is null");
  bad = t;
  bad.v_cache = static_cast<char *>(cache.data()) + 8;
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "v_cache (");
  bad = t;
  bad.head_dim = 100;
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "head_dim=100");
  bad = t;
  bad.num_pages = 0;
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "num_pages=0");
  bad = t;
  bad.k_stride = 100;
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "k_stride=100");
  const std::vector<int32_t> bad_last{1, 0}, bad_indptr{0, 1, 1};
  bad = t;
  bad.kv_indptr_host = indptr.data();
  bad.kv_last_page_len_host = bad_last.data();
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "kv_last_page_len[1]=0");
  bad.kv_indptr_host = bad_indptr.data();
  bad.kv_last_page_len_host = last.data();
  expect_invalid_call([&] { ops::cuda::kv_append(bad, nullptr); }, "request 1 has no page");
}

} // namespace
} // namespace hone::cuda

// decode.paged's sampled float64 reference on the host, no device: which rows the gate covers
// (every row of a small problem, at least sixteen, the largest count within the multiply-add
// budget, row 0 and the last row, every request of the model tune's long buckets), the
// (request, KV head) pairs those rows read and where their blocks lie in the paged cache, and
// the sampled reference over blocks gathered by those offsets giving the full reference's bits.
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/cuda_workload.h"
#include "cuda/ops/decode_paged_problem.h"
#include "cuda/ops/decode_paged_reference.h"
#include "hone/bf16.h"
#include "hone/error.h"
#include "hone/shape.h"

namespace hone::cuda {
namespace {

DecodePagedProblem problem_of(int64_t batch, int64_t max_len, int64_t total, int hq, int hkv,
                              int head_dim = 128, int page_size = 16) {
  return decode_paged_problem(
      Shape{{batch, max_len, total, hq, hkv, head_dim, page_size}, DType::bf16});
}

DecodePagedProblem problem_with(std::vector<int32_t> lengths, int hq, int hkv, int head_dim,
                                int page_size) {
  DecodePagedProblem p;
  p.hq = hq;
  p.hkv = hkv;
  p.head_dim = head_dim;
  p.page_size = page_size;
  p.lengths = std::move(lengths);
  return p;
}

// The rule's promises for a problem that samples: ascending, from row 0 to the last, at least
// the floor, within the budget above the floor, and one row more would not be.
void expect_bounded_sample(const DecodePagedProblem &p) {
  SCOPED_TRACE(::testing::Message() << "batch=" << p.batch() << " max_len=" << p.max_len()
                                    << " total_len=" << p.total_len() << " hq=" << p.hq);
  const int64_t rows = int64_t{p.batch()} * p.hq;
  const std::vector<int64_t> s = decode_paged_reference_rows(p);
  ASSERT_GE(s.size(), static_cast<size_t>(kDecodePagedMinReferenceRows));
  ASSERT_LT(static_cast<int64_t>(s.size()), rows);
  EXPECT_EQ(s, sampled_rows(rows, static_cast<int>(s.size())));
  EXPECT_EQ(s.front(), 0);
  EXPECT_EQ(s.back(), rows - 1);
  if (s.size() > static_cast<size_t>(kDecodePagedMinReferenceRows)) {
    EXPECT_LE(decode_paged_reference_macs(p, s), kDecodePagedReferenceMacs);
  }
  EXPECT_GT(decode_paged_reference_macs(p, sampled_rows(rows, static_cast<int>(s.size()) + 1)),
            kDecodePagedReferenceMacs)
      << s.size() << " rows is not the largest count within the budget";
}

TEST(DecodePagedReferenceRowsTest, EveryRowOfASmallProblem) {
  // 4 x 32 rows of 1024 tokens: 2^25 multiply-adds, the budget exactly.
  const DecodePagedProblem at_budget = problem_of(4, 1024, 4096, 32, 8);
  EXPECT_EQ(decode_paged_reference_macs(at_budget, {}), kDecodePagedReferenceMacs);
  EXPECT_TRUE(decode_paged_reference_rows(at_budget).empty());
  // Sixteen rows, however long: every row.
  EXPECT_TRUE(decode_paged_reference_rows(problem_of(1, 1 << 22, 1 << 22, 16, 2)).empty());
  // One token more than the budget samples.
  const DecodePagedProblem over = problem_with({1024, 1024, 1024, 1025}, 32, 8, 128, 16);
  EXPECT_EQ(decode_paged_reference_rows(over).size(), 127u);
}

// The model tune's longest bucket (Llama-3.1-8B): 8 requests of 131072 tokens, one row costs
// the whole budget, so the floor's 16 rows: 17 apart, two heads of every request, 16 distinct
// (request, KV head) pairs, 0.54 G multiply-adds of 8.6 G.
TEST(DecodePagedReferenceRowsTest, TheFloorAtOneMillionTokensInEightRequests) {
  const DecodePagedProblem p = problem_of(8, 131072, 1 << 20, 32, 8);
  const std::vector<int64_t> s = decode_paged_reference_rows(p);
  ASSERT_EQ(s.size(), 16u);
  for (size_t i = 0; i < s.size(); ++i)
    EXPECT_EQ(s[i], static_cast<int64_t>(17 * i));
  EXPECT_EQ(decode_paged_reference_macs(p, {}), int64_t{1} << 33);
  EXPECT_EQ(decode_paged_reference_macs(p, s), int64_t{16} << 25);
  const std::vector<DecodePagedKvHead> pairs = decode_paged_kv_heads(p, s);
  ASSERT_EQ(pairs.size(), 16u);
  std::set<int> requests;
  for (const DecodePagedKvHead &h : pairs)
    requests.insert(h.request);
  EXPECT_EQ(requests.size(), 8u) << "every request";
  EXPECT_EQ(pairs.front(), (DecodePagedKvHead{0, 0}));
  EXPECT_EQ(pairs.back(), (DecodePagedKvHead{7, 7}));
}

TEST(DecodePagedReferenceRowsTest, LargestCountWithinTheBudget) {
  // Uniform rows of 1024 tokens: 128 rows exactly fill the budget.
  const DecodePagedProblem uniform = problem_of(64, 1024, 65536, 32, 8);
  EXPECT_EQ(decode_paged_reference_rows(uniform).size(), 128u);
  expect_bounded_sample(uniform);
  // Ragged: request 0 at max_len, the rest sharing the remainder.
  for (const DecodePagedProblem &p :
       {problem_of(32, 131072, 1 << 20, 32, 8), problem_of(64, 4096, 65536, 32, 8),
        problem_of(256, 8192, 262144, 28, 4, 128, 32), problem_of(16, 2048, 16384, 32, 4, 64, 64),
        problem_of(4096, 16, 8192, 32, 8), problem_of(3, 40000, 40002, 8, 8, 256, 16)})
    expect_bounded_sample(p);
}

TEST(DecodePagedReferenceRowsTest, PairsAscendDistinctAndRefuseUnorderedRows) {
  const DecodePagedProblem p = problem_with({5, 40, 17, 3}, 32, 8, 128, 16); // 4 heads a KV head
  EXPECT_EQ(decode_paged_kv_heads(p, {0, 1, 3, 4, 40, 127}),
            (std::vector<DecodePagedKvHead>{{0, 0}, {0, 1}, {1, 2}, {3, 7}}));
  EXPECT_THROW(decode_paged_kv_heads(p, {4, 3}), Error);
  EXPECT_THROW(decode_paged_kv_heads(p, {128}), Error);
  EXPECT_EQ(decode_paged_reference_macs(p, {0, 40, 127}), (5 + 40 + 3) * 256);
}

TEST(DecodePagedReferenceRowsTest, BlockOffsetsFollowThePageTable) {
  const DecodePagedProblem p = problem_with({20, 3}, 4, 2, 64, 16);
  DecodePagedTable t;
  t.indptr = {0, 2, 3};
  t.indices = {2, 0, 1};
  // A page: 16 tokens x 2 KV heads x 64 = 2048 elements; a token row 128.
  EXPECT_EQ(decode_paged_kv_block_offsets(p, t, {{0, 1}, {1, 0}}),
            (std::vector<int64_t>{2 * 2048 + 64, 0 * 2048 + 64, 1 * 2048}));
}

// Random bf16 in [-1, 1): the bits of `count` values.
std::vector<uint16_t> random_bits(size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> out(count);
  for (uint16_t &v : out)
    v = float_to_bf16(u(rng));
  return out;
}

// What download_blocks() returns for `blocks` of a host tensor.
std::vector<uint16_t> gathered(const std::vector<uint16_t> &src, const BlockLayout &blocks) {
  std::vector<uint16_t> out;
  for (int64_t offset : blocks.offsets)
    for (int64_t r = 0; r < blocks.rows; ++r)
      out.insert(out.end(), src.begin() + offset + r * blocks.pitch,
                 src.begin() + offset + r * blocks.pitch + blocks.row);
  return out;
}

// Ragged requests (1 token, one page, partial last pages) in a shuffled pool, every slot no
// token owns NaN: the sampled reference of any rows, its K and V gathered by the block offsets,
// gives those rows of the full reference bit for bit, o and lse.
TEST(DecodePagedSampledReferenceTest, GivesTheFullReferenceBitsOfItsRows) {
  const DecodePagedProblem p = problem_with({1, 16, 17, 300, 45, 2}, 8, 2, 64, 16);
  const DecodePagedTable t = decode_paged_table(p, 11);
  std::mt19937 rng(5);
  const size_t token_row = 2 * 64, page = 16 * token_row;
  const std::vector<uint16_t> q = random_bits(static_cast<size_t>(p.batch()) * 8 * 64, rng);
  std::vector<uint16_t> k = random_bits(t.num_pages * page, rng),
                        v = random_bits(t.num_pages * page, rng);
  for (std::vector<uint16_t> *cache : {&k, &v}) {
    std::fill(cache->begin() + t.used * page, cache->end(), uint16_t{0xffff});
    for (int b = 0; b < p.batch(); ++b) {
      const size_t last_page = static_cast<size_t>(t.indices[t.indptr[b + 1] - 1]);
      std::fill(cache->begin() + last_page * page + t.last_page_len[b] * token_row,
                cache->begin() + (last_page + 1) * page, uint16_t{0xffff});
    }
  }
  const DecodePagedReference full = decode_paged_reference(p, t, q.data(), k.data(), v.data(), 0.3);
  std::vector<int64_t> all(static_cast<size_t>(p.batch()) * 8);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<int64_t>(i);
  // Single heads, a whole KV head's group, both KV heads of a request, and every row.
  for (const std::vector<int64_t> &rows : {std::vector<int64_t>{0, 47},
                                           {3, 4, 5, 6, 7, 8, 25},
                                           {24, 25, 26, 27, 28, 29, 30, 31, 40},
                                           all}) {
    BlockLayout q_rows{{}, 1, 64, 64};
    for (int64_t r : rows)
      q_rows.offsets.push_back(r * 64);
    const BlockLayout kv{decode_paged_kv_block_offsets(p, t, decode_paged_kv_heads(p, rows)), 16,
                         64, 2 * 64};
    const DecodePagedReference s = decode_paged_sampled_reference(
        p, rows, gathered(q, q_rows).data(), gathered(k, kv).data(), gathered(v, kv).data(), 0.3);
    ASSERT_EQ(s.o.size(), rows.size() * 64);
    ASSERT_EQ(s.lse.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto r = static_cast<size_t>(rows[i]);
      EXPECT_TRUE(
          std::equal(s.o.begin() + i * 64, s.o.begin() + (i + 1) * 64, full.o.begin() + r * 64))
          << "o row " << r;
      EXPECT_EQ(s.lse[i], full.lse[r]) << "lse row " << r;
    }
  }
  EXPECT_THROW(decode_paged_sampled_reference(p, {}, q.data(), k.data(), v.data(), 0.3), Error);
}

} // namespace
} // namespace hone::cuda

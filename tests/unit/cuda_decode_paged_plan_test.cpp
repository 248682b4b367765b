// decode.paged host logic, no device: tactic spelling, page-table and head validation messages,
// the split of a batch, the default kv_chunk heuristic and the tuning candidates on H200-like
// machine facts, the representative lengths of a bucket, the shuffled page table, the float64
// reference on hand-made inputs, and the registered op's buckets and validation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/decode_paged/decode_paged.h"
#include "cuda/ops/decode_paged_problem.h"
#include "cuda/ops/decode_paged_reference.h"
#include "hone/bf16.h"
#include "hone/error.h"
#include "hone/registry.h"

namespace hone::cuda {
namespace {

// 132 SMs, two resident CTAs of the default config each (head_dim 128, 4 warps, 96 KB).
constexpr DecodePagedMachine kH200{132, 2};

// kv_indptr of `lengths` in pages of `page_size`.
std::vector<int32_t> indptr_of(const std::vector<int32_t> &lengths, int page_size) {
  DecodePagedProblem p;
  p.page_size = page_size;
  p.lengths = lengths;
  return p.indptr();
}

std::vector<int32_t> uniform(int batch, int len) { return std::vector<int32_t>(batch, len); }

// The ragged acceptance batch: 16 lengths from 100 to 32768.
std::vector<int32_t> ragged16() {
  return {100, 32768, 517, 20000, 3000, 9000, 1024, 27000, 640, 15000, 5000, 12000, 250, 30000,
          7000, 2048};
}

template <class F> void expect_invalid(F f, const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "expected invalid_argument naming " << needle;
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DecodePagedConfigTest, TacticRoundTrip) {
  const DecodePagedConfig c{256, 8};
  EXPECT_EQ(c.to_tactic().str(), "decode.paged:kv_chunk=256,warps=8");
  EXPECT_EQ(DecodePagedConfig::from_tactic(Tactic::parse("decode.paged:kv_chunk=0,warps=4")),
            (DecodePagedConfig{0, 4}));
  expect_invalid([] { DecodePagedConfig::from_tactic(Tactic::parse("decode.paged:kv_chunk=64")); },
                 "decode.paged:kv_chunk=N,warps=W");
  expect_invalid(
      [] { DecodePagedConfig::from_tactic(Tactic::parse("decode.paged:kv_chunk=64,warps=3")); },
      "warps=3");
  expect_invalid(
      [] { DecodePagedConfig::from_tactic(Tactic::parse("decode.paged:kv_chunk=-16,warps=4")); },
      "kv_chunk=-16");
  expect_invalid([] { DecodePagedConfig::from_tactic(Tactic::parse("gemv.bf16.mma:warps=4")); },
                 "not a decode.paged config");
}

// The optional fields are spelled only away from their defaults, in a fixed order, so the
// default's spelling (and every cached kv_heads=1, two-kernel tactic) is unchanged.
TEST(DecodePagedConfigTest, OptionalFieldsRoundTripInOrder) {
  EXPECT_EQ((DecodePagedConfig{256, 4, 0, 1}).to_tactic().str(),
            "decode.paged:kv_chunk=256,warps=4");
  EXPECT_EQ((DecodePagedConfig{256, 8, 0, 4}).to_tactic().str(),
            "decode.paged:kv_chunk=256,warps=8,kv_heads=4");
  EXPECT_EQ((DecodePagedConfig{64, 4, 1, 1}).to_tactic().str(),
            "decode.paged:kv_chunk=64,warps=4,fused_merge=1");
  const DecodePagedConfig both{64, 8, 1, 8};
  EXPECT_EQ(both.to_tactic().str(), "decode.paged:kv_chunk=64,warps=8,kv_heads=8,fused_merge=1");
  EXPECT_EQ(DecodePagedConfig::from_tactic(both.to_tactic()), both);
  EXPECT_EQ(DecodePagedConfig::from_tactic(
                Tactic::parse("decode.paged:kv_chunk=0,warps=4,fused_merge=1")),
            (DecodePagedConfig{0, 4, 1, 1}));
  const auto bad = [](const char *text, const std::string &needle) {
    expect_invalid([&] { DecodePagedConfig::from_tactic(Tactic::parse(text)); }, needle);
  };
  bad("decode.paged:kv_chunk=64,warps=4,fused_merge=0", "fused_merge=0");
  bad("decode.paged:kv_chunk=64,warps=4,kv_heads=1", "kv_heads=1");
  bad("decode.paged:kv_chunk=64,warps=4,kv_heads=3", "kv_heads=3");
  bad("decode.paged:kv_chunk=64,warps=4,kv_heads=8", "kv_heads=8 exceeds warps=4");
  bad("decode.paged:kv_chunk=64,warps=4,fused_merge=1,kv_heads=2", "not a decode.paged config");
  bad("decode.paged:kv_chunk=64,warps=4,stages=3", "not a decode.paged config");

  std::string why;
  EXPECT_TRUE(decode_paged_can_implement({64, 8, 0, 8}, 8, 128, 16, &why)) << why;
  EXPECT_FALSE(decode_paged_can_implement({64, 8, 0, 4}, 2, 128, 16, &why));
  EXPECT_NE(why.find("kv_heads=4 does not divide hkv=2"), std::string::npos) << why;
  EXPECT_FALSE(decode_paged_can_implement({64, 2, 0, 4}, 8, 128, 16, &why));
  EXPECT_NE(why.find("exceeds warps=2"), std::string::npos) << why;
}

TEST(DecodePagedConfigTest, CanImplementNamesTheReason) {
  std::string why;
  EXPECT_TRUE(decode_paged_can_implement({256, 4}, 128, 16, &why)) << why;
  EXPECT_TRUE(decode_paged_can_implement({0, 8}, 64, 64, &why)) << why;
  EXPECT_FALSE(decode_paged_can_implement({24, 4}, 128, 16, &why));
  EXPECT_NE(why.find("kv_chunk=24"), std::string::npos) << why;
  EXPECT_FALSE(decode_paged_can_implement({64, 8}, 256, 16, &why)); // 8 x 32 KB ring
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  EXPECT_FALSE(decode_paged_can_implement({64, 4}, 96, 16, &why));
  EXPECT_NE(why.find("head_dim=96"), std::string::npos) << why;
  EXPECT_EQ(decode_paged_shared_bytes(4, 128), 4u * 3 * 2 * 16 * 128 * 2);
}

TEST(DecodePagedValidationTest, HeadsNameTheBadValue) {
  EXPECT_NO_THROW(decode_paged_validate_heads(32, 8, 128, 16));
  EXPECT_NO_THROW(decode_paged_validate_heads(28, 4, 64, 64));
  expect_invalid([] { decode_paged_validate_heads(30, 8, 128, 16); },
                 "hq=30 is not a multiple of hkv=8");
  expect_invalid([] { decode_paged_validate_heads(32, 2, 128, 16); }, "hq/hkv=16");
  expect_invalid([] { decode_paged_validate_heads(32, 0, 128, 16); }, "hkv=0");
  expect_invalid([] { decode_paged_validate_heads(32, 8, 96, 16); }, "head_dim=96");
  expect_invalid([] { decode_paged_validate_heads(32, 8, 128, 8); }, "page_size=8");
}

TEST(DecodePagedValidationTest, TableNamesTheBadValue) {
  const std::vector<int32_t> last{16, 3, 1};
  EXPECT_NO_THROW(decode_paged_validate_table(std::vector<int32_t>{0, 1, 3, 4}, last, 16));
  expect_invalid([&] { decode_paged_validate_table(std::vector<int32_t>{0, 2, 1, 4}, last, 16); },
                 "kv_indptr is not monotone: kv_indptr[1]=2 > kv_indptr[2]=1");
  expect_invalid([&] { decode_paged_validate_table(std::vector<int32_t>{0, 1, 1, 4}, last, 16); },
                 "request 1 has length 0");
  expect_invalid(
      [&] {
        decode_paged_validate_table(std::vector<int32_t>{0, 1, 3, 4}, std::vector<int32_t>{16, 0, 1},
                                    16);
      },
      "kv_last_page_len[1]=0 is outside 1..page_size=16");
  expect_invalid(
      [&] {
        decode_paged_validate_table(std::vector<int32_t>{0, 1, 3, 4},
                                    std::vector<int32_t>{16, 3, 17}, 16);
      },
      "kv_last_page_len[2]=17");
  expect_invalid(
      [&] { decode_paged_validate_table(std::vector<int32_t>{0}, std::vector<int32_t>{}, 16); },
      "batch=0");
  expect_invalid(
      [&] {
        decode_paged_validate_table(std::vector<int32_t>{-1, 1}, std::vector<int32_t>{4}, 16);
      },
      "kv_indptr[0]=-1");
  EXPECT_EQ(decode_paged_length(std::vector<int32_t>{0, 1, 3, 4}, last, 16, 1), 16 + 3);
}

TEST(DecodePagedSplitTest, ChunksFollowPagesAndWorkspaceFollowsChunks) {
  // Lengths 1, 16, 17, 300 in pages of 16: 1, 1, 2, 19 pages.
  const std::vector<int32_t> indptr = indptr_of({1, 16, 17, 300}, 16);
  const DecodePagedSplit none = decode_paged_split(indptr, 16, 0);
  EXPECT_EQ(none.chunks, 4);
  EXPECT_EQ(none.max_chunks, 1);
  EXPECT_EQ(decode_paged_workspace_bytes(none, 32, 128), 0u);
  const DecodePagedSplit s = decode_paged_split(indptr, 16, 64); // 4 pages a chunk
  EXPECT_EQ(s.chunks, 1 + 1 + 1 + 5);
  EXPECT_EQ(s.max_chunks, 5);
  // 8 x 32 lse floats (1 KB, already aligned), then 8 x 32 x 128 floats.
  EXPECT_EQ(decode_paged_workspace_bytes(s, 32, 128), 1024u + 8u * 32 * 128 * 4);
  const DecodePagedSplit t = decode_paged_split(indptr, 16, 16); // a page a chunk
  EXPECT_EQ(t.chunks, 1 + 1 + 2 + 19);
}

TEST(DecodePagedPrefetchTest, TilesPerWarpCoverTheKibPerCtaRoundedUp) {
  // A tile round of 4 warps at head_dim 128: 4 x 16 tokens x 128 x 2 bytes x (K, V) = 32 KiB.
  EXPECT_EQ(decode_paged_prefetch_tiles(0, 4, 128), 0);
  EXPECT_EQ(decode_paged_prefetch_tiles(-8, 4, 128), 0);
  EXPECT_EQ(decode_paged_prefetch_tiles(1, 4, 128), 1);
  EXPECT_EQ(decode_paged_prefetch_tiles(32, 4, 128), 1);
  EXPECT_EQ(decode_paged_prefetch_tiles(33, 4, 128), 2);
  EXPECT_EQ(decode_paged_prefetch_tiles(256, 4, 128), 8);
  EXPECT_EQ(decode_paged_prefetch_tiles(256, 8, 128), 4);
  EXPECT_EQ(decode_paged_prefetch_tiles(256, 4, 64), 16);
  EXPECT_EQ(decode_paged_prefetch_tiles(256, 2, 256), 8);
  EXPECT_EQ(decode_paged_prefetch_tiles(kDecodePagedMaxPrefetchKib, 1, 64), 1 << 16);
}

TEST(DecodePagedHeuristicTest, SplitsLongContextsOverEverySmAndLeavesFullBatchesWhole) {
  // The model counts one CTA slot per SM (decode_paged_config.cpp, kModelSlotsPerSm).
  const int slots = kH200.sms;
  const auto chunk = [&](const std::vector<int32_t> &lengths, int hkv = 8, int ps = 16) {
    return decode_paged_default_chunk(indptr_of(lengths, ps), ps, hkv, 4, kH200);
  };
  const auto items = [&](const std::vector<int32_t> &lengths, int c, int hkv = 8) {
    return hkv * decode_paged_split(indptr_of(lengths, 16), 16, c).chunks;
  };
  // Batch 1: split into one wave that fills the machine (more than half of the slots).
  for (int len : {4096, 32768, 131072}) {
    const int c = chunk({len});
    ASSERT_GT(c, 0) << len;
    EXPECT_EQ(c % 16, 0) << len;
    EXPECT_LE(items({len}, c), slots) << len;
    EXPECT_GT(items({len}, c), slots / 2) << len;
  }
  // Batch x hkv already fills the machine with equal lengths: no split.
  EXPECT_EQ(chunk(uniform(32, 4096)), 0);
  EXPECT_EQ(chunk(uniform(64, 2048)), 0);
  // 8 x 4k: 64 CTAs unsplit on 132 slots, so split.
  EXPECT_GT(chunk(uniform(8, 4096)), 0);
  // The ragged batch: split finer than the longest request, into more items than requests.
  const int r = chunk(ragged16());
  ASSERT_GT(r, 0);
  EXPECT_LT(r, 32768);
  EXPECT_GT(items(ragged16(), r), 16 * 8);
  // Short contexts never split below one tile per warp.
  const int tiny = chunk({1024});
  EXPECT_TRUE(tiny == 0 || tiny >= decode_paged_min_chunk(16, 4)) << tiny;
  EXPECT_EQ(chunk({64}), 0);
  EXPECT_EQ(chunk({1}), 0);
  // Page size 64 keeps chunks whole pages.
  EXPECT_EQ(chunk({32768}, 8, 64) % 64, 0);
  // Deterministic.
  EXPECT_EQ(chunk(ragged16()), chunk(ragged16()));
}

TEST(DecodePagedHeuristicTest, CandidatesAreAscendingPowersOfTwoWithinEightWaves) {
  const std::vector<int32_t> indptr = indptr_of({131072}, 16);
  const std::vector<int> c = decode_paged_candidate_chunks(indptr, 16, 8, 4, kH200);
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c.front(), 0);
  EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_EQ(c[i] % 16, 0);
    EXPECT_EQ(c[i] & (c[i] - 1), 0) << c[i]; // page_size x 2^i
    EXPECT_LT(c[i], 131072);
    EXPECT_LE(8 * decode_paged_split(indptr, 16, c[i]).chunks, 8 * 132 * 2);
  }
  // A short request leaves only "no split" and chunks below its length.
  const std::vector<int> one = decode_paged_candidate_chunks(indptr_of({100}, 16), 16, 8, 4, kH200);
  EXPECT_EQ(one, (std::vector<int>{0, 64}));
}

TEST(DecodePagedProblemTest, SyntheticLengthsFollowTheDocumentedRule) {
  EXPECT_EQ(decode_paged_synthetic_lengths(1, 4096, 4096), (std::vector<int32_t>{4096}));
  EXPECT_EQ(decode_paged_synthetic_lengths(4, 100, 400), (std::vector<int32_t>(4, 100)));
  // One at max_len, the rest share total - max evenly, the first ones one more.
  EXPECT_EQ(decode_paged_synthetic_lengths(4, 100, 200), (std::vector<int32_t>{100, 34, 33, 33}));
  // Inconsistent buckets are clamped: total at most batch x max, at least max + batch - 1.
  EXPECT_EQ(decode_paged_synthetic_lengths(2, 10, 1000), (std::vector<int32_t>{10, 10}));
  EXPECT_EQ(decode_paged_synthetic_lengths(3, 10, 3), (std::vector<int32_t>{10, 1, 1}));
  const DecodePagedProblem p =
      decode_paged_problem(Shape{{16, 32768, 262144, 32, 8, 128, 16}, DType::bf16});
  EXPECT_EQ(p.batch(), 16);
  EXPECT_EQ(p.max_len(), 32768);
  EXPECT_EQ(p.total_len(), 262144);
  EXPECT_EQ(p.shape(), (Shape{{16, 32768, 262144, 32, 8, 128, 16}, DType::bf16}));
}

TEST(DecodePagedProblemTest, TableIsAShuffledPermutationWithSpares) {
  DecodePagedProblem p;
  p.hq = 8;
  p.hkv = 2;
  p.head_dim = 64;
  p.page_size = 16;
  p.lengths = {1, 16, 17, 300};
  const DecodePagedTable t = decode_paged_table(p, 3);
  EXPECT_EQ(t.indptr, (std::vector<int32_t>{0, 1, 2, 4, 23}));
  EXPECT_EQ(t.last_page_len, (std::vector<int32_t>{1, 16, 1, 12}));
  EXPECT_EQ(t.used, 23);
  EXPECT_EQ(t.num_pages, 23 + 23 / 16 + 1);
  std::vector<int32_t> sorted = t.indices;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> iota(23);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(t.indices, iota); // shuffled
  EXPECT_EQ(decode_paged_table(p, 3).indices, t.indices);
}

// One request of 3 tokens in two pages of 2 (page size 16 in the layout, lengths 3): with equal
// keys the softmax is uniform and o is the mean of V; lse = log(3) + scale q.k.
TEST(DecodePagedReferenceTest, UniformAndOneHotAttention) {
  DecodePagedProblem p;
  p.hq = 2;
  p.hkv = 1;
  p.head_dim = 64;
  p.page_size = 16;
  p.lengths = {3};
  DecodePagedTable t;
  t.indptr = {0, 1};
  t.indices = {1}; // the request's page is page 1 of 2
  t.last_page_len = {3};
  t.used = 1;
  t.num_pages = 2;
  const size_t row = 64, page = 16 * row;
  std::vector<uint16_t> q(2 * row, float_to_bf16(0.0f)), k(2 * page, float_to_bf16(0.0f)),
      v(2 * page, float_to_bf16(0.0f));
  q[0] = float_to_bf16(1.0f);           // head 0: q = e0
  q[row + 1] = float_to_bf16(1.0f);     // head 1: q = e1
  for (int token = 0; token < 3; ++token) {
    k[page + token * row + 0] = float_to_bf16(1.0f);              // q0 . k = 1 for every token
    k[page + token * row + 1] = float_to_bf16(token == 2 ? 64.0f : 0.0f); // head 1: token 2 wins
    v[page + token * row + 5] = float_to_bf16(static_cast<float>(token + 1));
  }
  const DecodePagedReference r = decode_paged_reference(p, t, q.data(), k.data(), v.data(), 0.5);
  EXPECT_DOUBLE_EQ(r.o[5], 2.0); // (1 + 2 + 3) / 3
  EXPECT_NEAR(r.lse[0], 0.5 + std::log(3.0), 1e-12);
  const double w = std::exp(32.0);
  EXPECT_NEAR(r.o[row + 5], (1.0 + 2.0 + 3.0 * w) / (2.0 + w), 1e-12);
  EXPECT_NEAR(r.lse[1], std::log(2.0 + w), 1e-9);

  std::vector<uint16_t> o(2 * row);
  for (size_t i = 0; i < o.size(); ++i)
    o[i] = float_to_bf16(static_cast<float>(r.o[i]));
  const std::vector<float> lse{static_cast<float>(r.lse[0]), static_cast<float>(r.lse[1])};
  DecodePagedComparison c = compare_decode_paged(o, &lse, r, 64);
  EXPECT_LT(c.relative_l2, 4e-3);
  EXPECT_LT(c.lse_max_abs_error, 1e-5);
  o[7] = 0xffff; // an unwritten output
  c = compare_decode_paged(o, nullptr, r, 64);
  EXPECT_EQ(c.nan_count, 1u);
  EXPECT_TRUE(std::isinf(c.relative_l2));
}

TEST(DecodePagedOpHostTest, RegisteredWithBucketsAndValidation) {
  const TunableOp *op = Registry::global().find("decode.paged", "cuda");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->version(), 4); // never 1, 2 or 3 again: all were used (decode_paged_op.h)
  EXPECT_EQ(op->default_numerics(), Numerics::tolerance);
  const Shape raw{{12, 30000, 200000, 32, 8, 128, 16}, DType::bf16};
  const Shape b = op->buckets().map(raw).value();
  EXPECT_EQ(op->buckets().describe(b),
            "batch=16,max_len=32768,total_len=262144,hq=32,hkv=8,head_dim=128,page_size=16");
  EXPECT_NO_THROW(op->validate(raw));
  EXPECT_NO_THROW(op->validate(b));
  const auto bad = [&](std::vector<int64_t> dims, const std::string &needle) {
    expect_invalid([&] { op->validate(Shape(std::span<const int64_t>(dims), DType::bf16)); },
                   needle);
  };
  bad({1, 4096, 4096, 30, 8, 128, 16}, "hq=30 is not a multiple of hkv=8");
  bad({1, 4096, 4096, 32, 8, 96, 16}, "head_dim=96");
  bad({1, 4096, 4096, 32, 8, 128, 24}, "page_size=24");
  bad({0, 4096, 4096, 32, 8, 128, 16}, "batch=0");
  bad({1, 0, 4096, 32, 8, 128, 16}, "max_len=0");
  bad({1, 4096, 100, 32, 8, 128, 16}, "max_len=4096 exceeds total_len=100");
  bad({8, 1, 4, 32, 8, 128, 16}, "total_len=4 is below batch=8");
  bad({1, 4096, 4096, 32, 8, 128}, "7 dimensions");
  expect_invalid(
      [&] { op->validate(Shape{{1, 4096, 4096, 32, 8, 128, 16}, DType::f32}); }, "bf16");
}

} // namespace
} // namespace hone::cuda

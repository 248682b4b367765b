// rope (cuda): the frequencies (plain and Llama-3.1 scaling) on the host; every tactic against
// the float64 reference on fresh random inputs; batch invariance; the reference sampled at many
// rows; the entry point in place on q/k slices of a fused q/k/v output at long positions, out of
// place with the same bits, as a dependent launch; bad input named.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/bf16_compare.h"
#include "cuda/kernels/rope/rope.h"
#include "cuda/ops/rope_op.h"
#include "device_test.h"
#include "hone/bf16.h"
#include "hone/ops/cuda.h"
#include "op_test_helpers.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::check_every_tactic;
using testing::DeviceTest;
using testing::download_bf16;
using testing::expect_default_first_and_distinct;
using testing::expect_defaults_batch_invariant;
using testing::expect_invalid;
using testing::expect_invalid_call;
using testing::expect_sampled_reference;
using testing::paged_append;
using testing::poisoned;
using testing::random_bf16;
using testing::reduced_shapes;
using testing::registered_op;
using testing::upload;

Shape shape_of(int rows, int hq, int hkv, int head_dim) {
  return Shape{{rows, hq, hkv, head_dim}, DType::bf16};
}

const TunableOp &rope_op() { return registered_op("rope"); }

TEST(RopeOpHostTest, OpIdentityBucketsAndCandidates) {
  const TunableOp &op = rope_op();
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.default_numerics(), Numerics::batch_invariant);
  const Shape b = op.buckets().map(shape_of(12, 32, 8, 128)).value();
  EXPECT_EQ(op.buckets().describe(b), "rows=16,hq=32,hkv=8,head_dim=128");
  const std::vector<Tactic> c = op.candidates(b);
  ASSERT_GT(c.size(), 2u);
  expect_default_first_and_distinct(c, op.default_tactic(b));
}

TEST(RopeOpHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = rope_op();
  expect_invalid(op, shape_of(4, 32, 8, 100), "head_dim=100");
  expect_invalid(op, shape_of(4, 32, 8, 512), "head_dim=512");
  expect_invalid(op, shape_of(0, 32, 8, 128), "rows=0");
  expect_invalid(op, shape_of(4, 0, 8, 128), "hq=0");
}

TEST(RopeOpHostTest, FrequenciesPlainAndLlama3) {
  const std::vector<double> plain = rope_inv_freq(RopeFrequencies{10000.0}, 128);
  ASSERT_EQ(plain.size(), 64u);
  for (int i = 0; i < 64; ++i)
    EXPECT_DOUBLE_EQ(plain[static_cast<size_t>(i)], std::pow(10000.0, -2.0 * i / 128));
  // Llama-3.1-8B's rope_scaling: high frequencies kept, low ones divided by the factor, the
  // band between interpolated.
  RopeFrequencies f{500000.0, 8.0, 1.0, 4.0, 8192.0};
  const std::vector<double> scaled = rope_inv_freq(f, 128);
  int kept = 0, divided = 0, smoothed = 0;
  for (int i = 0; i < 64; ++i) {
    const double base = std::pow(500000.0, -2.0 * i / 128);
    const double wavelen = 2 * std::numbers::pi / base;
    const double got = scaled[static_cast<size_t>(i)];
    if (wavelen < 8192.0 / 4) {
      EXPECT_DOUBLE_EQ(got, base) << i;
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_DOUBLE_EQ(got, base / 8) << i;
      ++divided;
    } else {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      EXPECT_NEAR(got, (1 - smooth) * base / 8 + smooth * base, 1e-15 * base) << i;
      ++smoothed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
  try {
    rope_inv_freq(RopeFrequencies{1.0}, 128);
    ADD_FAILURE() << "theta=1 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("theta=1"), std::string::npos) << e.what();
  }
  try {
    rope_inv_freq(RopeFrequencies{500000.0, 0.5}, 128);
    ADD_FAILURE() << "factor 0.5 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("factor=0.5"), std::string::npos) << e.what();
  }
}

class RopeOpTest : public DeviceTest {};

TEST_F(RopeOpTest, EveryTacticMatchesTheReference) {
  const std::vector<int> rows =
      reduced_shapes() ? std::vector<int>{1, 5} : std::vector<int>{1, 3, 16, 64};
  for (int r : rows)
    for (const auto &[hq, hkv, d] :
         {std::tuple{32, 8, 128}, std::tuple{12, 2, 128}, std::tuple{32, 8, 64},
          std::tuple{4, 1, 8}, std::tuple{8, 8, 256}})
      EXPECT_GT(check_every_tactic(rope_op(), shape_of(r, hq, hkv, d), kRopeRelativeL2Bound), 0);
}

TEST_F(RopeOpTest, DefaultsAreBatchInvariant) {
  expect_defaults_batch_invariant(rope_op(), shape_of(24, 28, 4, 128),
                                  rope_default(24, 28, 4, 128).to_tactic());
}

// Prefill rows: the reference covers elementwise_reference_row_count((hq + hkv) x head_dim)
// tokens (819 at 40 x 128), not all 2000.
TEST_F(RopeOpTest, ReferenceSamplesRowsAtManyRows) {
  expect_sampled_reference<RopeWorkload>(rope_op(), shape_of(2000, 32, 8, 128), 819,
                                         kRopeRelativeL2Bound);
}

TEST_F(RopeOpTest, EntryPointInPlaceOutOfPlaceAndDependent) {
  const int rows = 5, hq = 4, hkv = 2, head_dim = 128;
  const int64_t row = static_cast<int64_t>(hq + 2 * hkv) * head_dim; // fused q/k/v
  const std::vector<uint16_t> qkv = random_bf16(static_cast<size_t>(rows * row));
  const std::vector<int32_t> positions{0, 1, 4095, 70000, 131071};
  DeviceBuffer dqkv = upload(qkv), dpos = upload(positions);
  DeviceBuffer q_out = poisoned(static_cast<size_t>(rows) * hq * head_dim * 2);
  DeviceBuffer k_out = poisoned(static_cast<size_t>(rows) * hkv * head_dim * 2);
  ops::cuda::RopeTensors t;
  t.q = dqkv.data();
  t.k = static_cast<const uint16_t *>(dqkv.data()) + hq * head_dim;
  t.q_stride = t.k_stride = row;
  t.q_out = q_out.data();
  t.k_out = k_out.data();
  t.positions = dpos.as<const int32_t>();
  t.rows = rows;
  t.hq = hq;
  t.hkv = hkv;
  t.head_dim = head_dim;
  t.theta = 500000.0;
  t.llama3_factor = 8.0;
  ops::cuda::rope(t, nullptr);
  const std::vector<uint16_t> yq = download_bf16(q_out, static_cast<size_t>(rows) * hq * head_dim);
  const std::vector<uint16_t> yk = download_bf16(k_out, static_cast<size_t>(rows) * hkv * head_dim);

  // Reference: the q and k heads gathered from the fused rows.
  std::vector<uint16_t> q, k;
  for (int r = 0; r < rows; ++r) {
    const auto at = qkv.begin() + r * row;
    q.insert(q.end(), at, at + hq * head_dim);
    k.insert(k.end(), at + hq * head_dim, at + (hq + hkv) * head_dim);
  }
  RopeFrequencies f{500000.0, 8.0};
  const std::vector<double> inv = rope_inv_freq(f, head_dim);
  const Bf16Comparison cq = compare_bf16(yq, rope_reference(q, positions, inv, rows, hq, head_dim));
  const Bf16Comparison ck =
      compare_bf16(yk, rope_reference(k, positions, inv, rows, hkv, head_dim));
  EXPECT_EQ(cq.nan_count + ck.nan_count, 0u);
  EXPECT_LE(cq.relative_l2, kRopeRelativeL2Bound);
  EXPECT_LE(ck.relative_l2, kRopeRelativeL2Bound);

  // In place, as a dependent launch: the same bits in the fused rows; v untouched.
  ops::cuda::RopeTensors in_place = t;
  in_place.q_out = in_place.k_out = nullptr;
  in_place.dependent = true;
  ops::cuda::rope(in_place, nullptr);
  const std::vector<uint16_t> after = download_bf16(dqkv, qkv.size());
  for (int r = 0; r < rows; ++r) {
    const auto at = after.begin() + r * row;
    EXPECT_TRUE(std::equal(at, at + hq * head_dim, yq.begin() + r * hq * head_dim)) << r;
    EXPECT_TRUE(
        std::equal(at + hq * head_dim, at + (hq + hkv) * head_dim, yk.begin() + r * hkv * head_dim))
        << r;
    EXPECT_TRUE(std::equal(at + (hq + hkv) * head_dim, at + row,
                           qkv.begin() + r * row + (hq + hkv) * head_dim))
        << "v of row " << r << " changed";
  }
}

// The fused append (and Qwen2's bias) against the launches it replaces: bias added on the host
// as a separate add rounds it, rope out of place, kv_append of the roped k and of v. q_out and
// both caches must be bit-identical; the cache slots no token owns stay as they were.
TEST_F(RopeOpTest, FusedAppendAndBiasGiveTheSeparateLaunchesBits) {
  const int rows = 6, hq = 8, hkv = 2, head_dim = 128, page_size = 16, num_pages = 7;
  const int64_t row = static_cast<int64_t>(hq + 2 * hkv) * head_dim; // fused q/k/v
  const std::vector<uint16_t> qkv = random_bf16(static_cast<size_t>(rows * row));
  const std::vector<uint16_t> bias = random_bf16(static_cast<size_t>(row), 0.5f);
  const std::vector<int32_t> positions{0, 1, 17, 4095, 70000, 131071};
  // One request per row; row 4's page is out of range (never written), row 5 shares row 0's
  // page at another slot.
  const std::vector<int32_t> indptr{0, 2, 3, 4, 6, 7, 8}, indices{5, 1, 3, 0, 6, 2, 9, 1};
  const std::vector<int32_t> last{4, 16, 1, 9, 3, 5};
  const size_t q_count = static_cast<size_t>(rows) * hq * head_dim;
  const size_t cache = static_cast<size_t>(num_pages) * page_size * hkv * head_dim;
  std::vector<uint16_t> biased = qkv;
  for (size_t i = 0; i < biased.size(); ++i)
    biased[i] = float_to_bf16(bf16_to_float(qkv[i]) + bf16_to_float(bias[i % bias.size()]));
  DeviceBuffer dpos = upload(positions), dindptr = upload(indptr), dindices = upload(indices);
  DeviceBuffer dlast = upload(last), dbias = upload(bias);
  const RopeFrequencies f{1000000.0};
  for (bool with_bias : {false, true}) {
    const std::vector<uint16_t> &separate_in = with_bias ? biased : qkv;
    DeviceBuffer a_qkv = upload(separate_in), b_qkv = upload(qkv);
    const std::vector<uint16_t> cache_fill = random_bf16(cache);
    DeviceBuffer a_k = upload(cache_fill), a_v = upload(cache_fill);
    DeviceBuffer b_k = upload(cache_fill), b_v = upload(cache_fill);
    DeviceBuffer a_q = poisoned(q_count * 2), b_q = poisoned(q_count * 2);
    DeviceBuffer a_kout = poisoned(static_cast<size_t>(rows) * hkv * head_dim * 2);
    const auto rope_of = [&](DeviceBuffer &in, DeviceBuffer &q_out) {
      ops::cuda::RopeTensors t;
      t.q = in.data();
      t.k = static_cast<const uint16_t *>(in.data()) + hq * head_dim;
      t.q_stride = t.k_stride = row;
      t.q_out = q_out.data();
      t.positions = dpos.as<const int32_t>();
      t.rows = rows;
      t.hq = hq;
      t.hkv = hkv;
      t.head_dim = head_dim;
      t.theta = f.theta;
      return t;
    };
    const auto append_into = [&](DeviceBuffer &in, DeviceBuffer &k_cache, DeviceBuffer &v_cache) {
      ops::cuda::KvAppendTensors a = paged_append(k_cache, v_cache, dindptr, dindices, dlast, rows,
                                                  num_pages, hkv, head_dim, page_size, false);
      a.v = static_cast<const uint16_t *>(in.data()) + (hq + hkv) * head_dim;
      a.v_stride = row;
      return a;
    };
    // Separate: rope (k to a_kout), then kv_append of the roped k and of v.
    ops::cuda::RopeTensors ta = rope_of(a_qkv, a_q);
    ta.k_out = a_kout.data();
    ops::cuda::rope(ta, nullptr);
    ops::cuda::KvAppendTensors aa = append_into(a_qkv, a_k, a_v);
    aa.k = a_kout.data();
    ops::cuda::kv_append(aa, nullptr);
    // Fused, as a dependent launch.
    ops::cuda::RopeTensors tb = rope_of(b_qkv, b_q);
    const ops::cuda::KvAppendTensors ab = append_into(b_qkv, b_k, b_v);
    tb.append = &ab;
    tb.qkv_bias = with_bias ? dbias.data() : nullptr;
    tb.dependent = true;
    ops::cuda::rope(tb, nullptr);
    const std::string what = with_bias ? "with the bias" : "without a bias";
    EXPECT_EQ(download_bf16(b_q, q_count), download_bf16(a_q, q_count)) << "q, " << what;
    const std::vector<uint16_t> bk = download_bf16(b_k, cache), bv = download_bf16(b_v, cache);
    EXPECT_EQ(bk, download_bf16(a_k, cache)) << "K cache, " << what;
    EXPECT_EQ(bv, download_bf16(a_v, cache)) << "V cache, " << what;
    // Something was written: each request's new-token slot differs from the fill.
    size_t changed = 0;
    for (size_t i = 0; i < cache; ++i)
      changed += (bk[i] != cache_fill[i]) + (bv[i] != cache_fill[i]);
    EXPECT_GT(changed, static_cast<size_t>(rows - 1) * hkv * head_dim) << what;
  }
}

TEST_F(RopeOpTest, EntryPointNamesBadInput) {
  const int hq = 2, hkv = 1, head_dim = 64;
  DeviceBuffer q = upload(random_bf16(hq * head_dim)), k = upload(random_bf16(hkv * head_dim));
  DeviceBuffer pos = upload(std::vector<int32_t>{3});
  ops::cuda::RopeTensors t;
  t.q = q.data();
  t.k = k.data();
  t.positions = pos.as<const int32_t>();
  t.rows = 1;
  t.hq = hq;
  t.hkv = hkv;
  t.head_dim = head_dim;
  auto bad = t;
  bad.positions = nullptr;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "positions is null");
  bad = t;
  bad.k = static_cast<const char *>(k.data()) + 4;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "k (");
  bad = t;
  bad.head_dim = 100;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "head_dim=100");
  bad = t;
  bad.q_stride = 100;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "q_stride=100");
  bad = t;
  bad.theta = 0.5;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "theta=0.5");
  bad = t;
  bad.q_out = q.data(); // k_out missing
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "k_out is null");
  bad = t;
  bad.qkv_bias = q.data();
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "qkv_bias needs the fused append");
  // The fused append: its k must be null and its shape rope's.
  DeviceBuffer k_cache = poisoned(16 * hkv * head_dim * 2),
               v_cache = poisoned(16 * hkv * head_dim * 2);
  DeviceBuffer indptr = upload(std::vector<int32_t>{0, 1}),
               indices = upload(std::vector<int32_t>{0});
  DeviceBuffer last = upload(std::vector<int32_t>{1});
  ops::cuda::KvAppendTensors app =
      paged_append(k_cache, v_cache, indptr, indices, last, 1, 1, hkv, head_dim, 16, false);
  app.v = k.data();
  bad = t;
  auto bad_app = app;
  bad.append = &bad_app;
  bad_app.k = k.data();
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "append->k must be nullptr");
  bad_app = app;
  bad_app.batch = 2;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "append has batch=2");
  bad_app = app;
  bad_app.page_size = 8;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "append->page_size=8");
  bad_app = app;
  bad_app.num_pages = 0;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "num_pages=0");
  bad_app = app;
  const int32_t bad_last = 17, one_page[] = {0, 1};
  bad_app.kv_indptr_host = one_page;
  bad_app.kv_last_page_len_host = &bad_last;
  expect_invalid_call([&] { ops::cuda::rope(bad, nullptr); }, "kv_last_page_len[0]=17");
}

} // namespace
} // namespace hone::cuda

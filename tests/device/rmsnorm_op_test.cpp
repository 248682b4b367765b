// rmsnorm (cuda): every tactic against the float64 reference on fresh random inputs, with and
// without the residual add; batch invariance of the defaults; the reference sampled at many rows
// (both outputs of each sampled row); the entry point (in place, the fused add equal to the add
// then a plain rmsnorm, PDL on equal to off); bad input named.
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/bf16_compare.h"
#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "cuda/ops/rmsnorm_op.h"
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
using testing::expect_defaults_batch_invariant;
using testing::expect_invalid;
using testing::expect_invalid_call;
using testing::expect_sampled_reference;
using testing::poisoned;
using testing::random_bf16;
using testing::reduced_shapes;
using testing::registered_op;
using testing::upload;

Shape shape_of(int rows, int hidden, bool residual) {
  return Shape{{rows, hidden, residual ? 1 : 0}, DType::bf16};
}

const TunableOp &rmsnorm_op() { return registered_op("rmsnorm"); }

TEST(RmsnormOpHostTest, OpIdentityBucketsAndCandidates) {
  const TunableOp &op = rmsnorm_op();
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.version(), 2); // 2: the few-rows form of the default
  EXPECT_EQ(op.default_numerics(), Numerics::batch_invariant);
  const Shape b = op.buckets().map(shape_of(12, 4096, true)).value();
  EXPECT_EQ(op.buckets().describe(b), "rows=16,hidden=4096,residual=1");
  const std::vector<Tactic> c = op.candidates(b);
  ASSERT_GT(c.size(), 4u);
  expect_default_first_and_distinct(c, op.default_tactic(b));
  // The default's order follows hidden only.
  for (int hidden : {64, 1536, 4096, 8192, 32768})
    EXPECT_EQ(rmsnorm_default(1, hidden).lanes(), rmsnorm_default(4096, hidden).lanes());
  EXPECT_EQ(RmsnormConfig::from_tactic(rmsnorm_default(1, 4096).to_tactic()),
            rmsnorm_default(1, 4096));
}

TEST(RmsnormOpHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = rmsnorm_op();
  expect_invalid(op, shape_of(4, 1001, false), "hidden=1001");
  expect_invalid(op, shape_of(4, 65536, false), "hidden=65536");
  expect_invalid(op, shape_of(0, 4096, false), "rows=0");
  expect_invalid(op, Shape{{4, 4096, 2}, DType::bf16}, "residual=2");
}

class RmsnormOpTest : public DeviceTest {};

TEST_F(RmsnormOpTest, EveryTacticMatchesTheReference) {
  const std::vector<int> rows =
      reduced_shapes() ? std::vector<int>{1, 5} : std::vector<int>{1, 3, 16, 64};
  const std::vector<int> hiddens = reduced_shapes()
                                       ? std::vector<int>{1536, 64}
                                       : std::vector<int>{4096, 1536, 3584, 8192, 64, 32768};
  for (int h : hiddens)
    for (int r : rows)
      for (bool residual : {false, true})
        EXPECT_GT(
            check_every_tactic(rmsnorm_op(), shape_of(r, h, residual), kRmsnormRelativeL2Bound), 0);
}

TEST_F(RmsnormOpTest, DefaultsAreBatchInvariant) {
  for (int h : {4096, 1536, 8192})
    for (bool residual : {false, true})
      expect_defaults_batch_invariant(rmsnorm_op(), shape_of(24, h, residual),
                                      rmsnorm_default(24, h).to_tactic());
  // Past the few-rows form (hidden 1536: 16-byte vectors, 64 threads), against rows run one at
  // a time by the rows=1 default (8-byte vectors, 128 threads): the same lanes, the same bits.
  ASSERT_NE(rmsnorm_default(600, 1536), rmsnorm_default(1, 1536));
  for (bool residual : {false, true})
    expect_defaults_batch_invariant(rmsnorm_op(), shape_of(600, 1536, residual),
                                    rmsnorm_default(600, 1536).to_tactic());
}

// Prefill rows: the reference covers elementwise_reference_row_count(hidden, 2 x hidden with a
// residual) input rows (1024, or 512 with a residual, at 4096), and with a residual both
// outputs of each: out and residual_out, each from its first row to its last.
TEST_F(RmsnormOpTest, ReferenceSamplesRowsAtManyRows) {
  expect_sampled_reference<RmsnormWorkload>(rmsnorm_op(), shape_of(2000, 4096, false), 1024,
                                            kRmsnormRelativeL2Bound);
  expect_sampled_reference<RmsnormWorkload>(rmsnorm_op(), shape_of(600, 4096, true), 1024,
                                            kRmsnormRelativeL2Bound);
  std::unique_ptr<Workload> w = rmsnorm_op().prepare(shape_of(600, 4096, true));
  const std::vector<int64_t> rows = dynamic_cast<RmsnormWorkload &>(*w).reference_rows();
  ASSERT_EQ(rows.size(), 1024u);
  EXPECT_EQ(rows[511], 599); // out's last row
  EXPECT_EQ(rows[512], 600); // residual_out's first
  for (size_t i = 0; i < 512; ++i)
    ASSERT_EQ(rows[512 + i], rows[i] + 600) << "both outputs of input row " << rows[i];
}

struct RmsnormData {
  int rows, hidden;
  std::vector<uint16_t> x, r, w;
};

RmsnormData make_data(int rows, int hidden) {
  return {rows, hidden, random_bf16(static_cast<size_t>(rows) * hidden),
          random_bf16(static_cast<size_t>(rows) * hidden), random_bf16(hidden)};
}

TEST_F(RmsnormOpTest, EntryPointFusedInPlaceAndDependent) {
  const RmsnormData d = make_data(7, 4096);
  const size_t n = d.x.size();
  DeviceBuffer x = upload(d.x), r = upload(d.r), w = upload(d.w);
  DeviceBuffer out = poisoned(2 * n), residual_out = poisoned(2 * n);
  ops::cuda::RmsnormTensors t;
  t.x = x.data();
  t.residual = r.data();
  t.residual_out = residual_out.data();
  t.w = w.data();
  t.out = out.data();
  t.rows = d.rows;
  t.hidden = d.hidden;
  t.eps = 1e-5f;
  ops::cuda::rmsnorm(t, nullptr);
  const std::vector<uint16_t> y = download_bf16(out, n), h = download_bf16(residual_out, n);

  // residual_out = bf16(x + residual) bit for bit; out against the float64 reference.
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(h[i], float_to_bf16(bf16_to_float(d.x[i]) + bf16_to_float(d.r[i]))) << i;
  const Bf16Comparison c =
      compare_bf16(y, rmsnorm_reference(d.x, d.r, d.w, d.rows, d.hidden, 1e-5));
  EXPECT_EQ(c.nan_count, 0u);
  EXPECT_LE(c.relative_l2, kRmsnormRelativeL2Bound);

  // The fused call equals a plain rmsnorm of residual_out.
  DeviceBuffer plain = poisoned(2 * n);
  ops::cuda::RmsnormTensors p = t;
  p.x = residual_out.data();
  p.residual = nullptr;
  p.residual_out = nullptr;
  p.out = plain.data();
  ops::cuda::rmsnorm(p, nullptr);
  EXPECT_EQ(download_bf16(plain, n), y);

  // In place (out over x, residual_out over residual) and as a dependent launch: same bits.
  ops::cuda::RmsnormTensors in_place = t;
  in_place.out = x.data();
  in_place.residual_out = r.data();
  in_place.dependent = true;
  ops::cuda::rmsnorm(in_place, nullptr);
  EXPECT_EQ(download_bf16(x, n), y);
  EXPECT_EQ(download_bf16(r, n), h);
}

TEST_F(RmsnormOpTest, EntryPointNamesBadInput) {
  const RmsnormData d = make_data(2, 1536);
  DeviceBuffer x = upload(d.x), w = upload(d.w), out = poisoned(2 * d.x.size());
  ops::cuda::RmsnormTensors t;
  t.x = x.data();
  t.w = w.data();
  t.out = out.data();
  t.rows = d.rows;
  t.hidden = d.hidden;
  auto bad = t;
  bad.x = nullptr;
  expect_invalid_call([&] { ops::cuda::rmsnorm(bad, nullptr); }, "x is null");
  bad = t;
  bad.w = static_cast<const char *>(w.data()) + 2;
  expect_invalid_call([&] { ops::cuda::rmsnorm(bad, nullptr); }, "w (");
  bad = t;
  bad.hidden = 1000 + 4;
  expect_invalid_call([&] { ops::cuda::rmsnorm(bad, nullptr); }, "hidden=1004");
  bad = t;
  bad.residual = x.data();
  expect_invalid_call([&] { ops::cuda::rmsnorm(bad, nullptr); }, "residual_out is null");
  bad = t;
  bad.eps = -1;
  expect_invalid_call([&] { ops::cuda::rmsnorm(bad, nullptr); }, "eps=");
  // Nothing was launched: the output is still poison.
  for (uint16_t v : download_bf16(out, d.x.size()))
    ASSERT_EQ(v, 0xffffu);
}

} // namespace
} // namespace hone::cuda

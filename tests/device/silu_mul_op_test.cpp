// silu_mul (cuda): every tactic against the float64 reference on fresh random inputs; batch
// invariance; the reference sampled at many rows; the entry point on the fused gate/up tensor
// and on two tensors (same bits), as a dependent launch; bad input named.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/bf16_compare.h"
#include "cuda/kernels/silu_mul/silu_mul.h"
#include "cuda/ops/silu_mul_op.h"
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

Shape shape_of(int rows, int inter) { return Shape{{rows, inter}, DType::bf16}; }

const TunableOp &silu_mul_op() { return registered_op("silu_mul"); }

TEST(SiluMulOpHostTest, OpIdentityBucketsAndCandidates) {
  const TunableOp &op = silu_mul_op();
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.default_numerics(), Numerics::batch_invariant);
  const Shape b = op.buckets().map(shape_of(12, 14336)).value();
  EXPECT_EQ(op.buckets().describe(b), "rows=16,inter=14336");
  const std::vector<Tactic> c = op.candidates(b);
  ASSERT_GT(c.size(), 4u);
  expect_default_first_and_distinct(c, op.default_tactic(b));
}

TEST(SiluMulOpHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = silu_mul_op();
  expect_invalid(op, shape_of(4, 14337), "inter=14337");
  expect_invalid(op, shape_of(0, 14336), "rows=0");
  expect_invalid(op, shape_of(40000, 14336), "rows=40000");
}

class SiluMulOpTest : public DeviceTest {};

TEST_F(SiluMulOpTest, EveryTacticMatchesTheReference) {
  const std::vector<int> rows =
      reduced_shapes() ? std::vector<int>{1, 5} : std::vector<int>{1, 3, 16, 64};
  const std::vector<int> inters =
      reduced_shapes() ? std::vector<int>{8960, 72} : std::vector<int>{14336, 8960, 18944, 72};
  for (int i : inters)
    for (int r : rows)
      EXPECT_GT(check_every_tactic(silu_mul_op(), shape_of(r, i), kSiluMulRelativeL2Bound), 0);
}

TEST_F(SiluMulOpTest, EveryTacticIsBatchInvariant) {
  const Shape shape = shape_of(24, 8960);
  const TunableOp &op = silu_mul_op();
  expect_defaults_batch_invariant(op, shape, silu_mul_default(24, 8960).to_tactic());
  std::unique_ptr<Workload> w = op.prepare(shape);
  for (const Tactic &t : op.candidates(op.buckets().map(shape).value())) {
    if (w->can_run(t, nullptr) != Status::ok)
      continue;
    const CheckResult r = w->check(t, Numerics::batch_invariant);
    EXPECT_TRUE(r.pass()) << t.str() << ": " << r.reason;
  }
}

// Prefill rows: the reference covers elementwise_reference_row_count(inter) rows (292 at
// 14336), not all 1000.
TEST_F(SiluMulOpTest, ReferenceSamplesRowsAtManyRows) {
  expect_sampled_reference<SiluMulWorkload>(silu_mul_op(), shape_of(1000, 14336), 292,
                                            kSiluMulRelativeL2Bound);
}

TEST_F(SiluMulOpTest, EntryPointFusedAndSplitAgree) {
  const int rows = 5, inter = 14336;
  // Gate spans [-8, 8): both tails of silu.
  std::vector<uint16_t> gate = random_bf16(static_cast<size_t>(rows) * inter, 8.0f);
  std::vector<uint16_t> up = random_bf16(gate.size());
  std::vector<uint16_t> fused;
  for (int r = 0; r < rows; ++r) {
    fused.insert(fused.end(), gate.begin() + r * inter, gate.begin() + (r + 1) * inter);
    fused.insert(fused.end(), up.begin() + r * inter, up.begin() + (r + 1) * inter);
  }
  DeviceBuffer dg = upload(gate), du = upload(up), df = upload(fused);
  DeviceBuffer out1 = poisoned(gate.size() * 2), out2 = poisoned(gate.size() * 2);
  ops::cuda::SiluMulTensors t;
  t.gate_up = df.data();
  t.out = out1.data();
  t.rows = rows;
  t.inter = inter;
  ops::cuda::silu_mul(t, nullptr);
  ops::cuda::SiluMulTensors s;
  s.gate = dg.data();
  s.up = du.data();
  s.out = out2.data();
  s.rows = rows;
  s.inter = inter;
  s.dependent = true;
  ops::cuda::silu_mul(s, nullptr);
  const std::vector<uint16_t> y = download_bf16(out1, gate.size());
  const Bf16Comparison c = compare_bf16(y, silu_mul_reference(fused, rows, inter));
  EXPECT_EQ(c.nan_count, 0u);
  EXPECT_LE(c.relative_l2, kSiluMulRelativeL2Bound);
  EXPECT_EQ(download_bf16(out2, gate.size()), y);
}

TEST_F(SiluMulOpTest, EntryPointNamesBadInput) {
  std::vector<uint16_t> gate_up = random_bf16(2 * 64);
  DeviceBuffer d = upload(gate_up), out = poisoned(64 * 2);
  ops::cuda::SiluMulTensors t;
  t.gate_up = d.data();
  t.out = out.data();
  t.rows = 1;
  t.inter = 64;
  auto bad = t;
  bad.gate = d.data();
  expect_invalid_call([&] { ops::cuda::silu_mul(bad, nullptr); }, "not both");
  bad = t;
  bad.gate_up = nullptr;
  expect_invalid_call([&] { ops::cuda::silu_mul(bad, nullptr); }, "gate is null");
  bad = t;
  bad.out = static_cast<char *>(out.data()) + 2;
  expect_invalid_call([&] { ops::cuda::silu_mul(bad, nullptr); }, "out (");
  bad = t;
  bad.inter = 60;
  expect_invalid_call([&] { ops::cuda::silu_mul(bad, nullptr); }, "inter=60");
  for (uint16_t v : download_bf16(out, 64))
    ASSERT_EQ(v, 0xffffu);
}

} // namespace
} // namespace hone::cuda

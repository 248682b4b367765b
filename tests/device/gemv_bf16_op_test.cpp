// gemv.bf16 (cuda): every tactic against the float64 reference on fresh random inputs,
// leftover shapes, the poison/NaN gate, the spill rule, and batch invariance of the default.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/bf16_compare.h"
#include "cuda/backend/bf16.h"
#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/ops/gemv_bf16_reference.h"
#include "device_test.h"
#include "hone/error.h"
#include "op_test_helpers.h"

namespace hone::cuda {
namespace {

using testing::check_every_tactic;
using testing::DeviceTest;
using testing::expect_defaults_batch_invariant;
using testing::expect_invalid;
using testing::expect_spill_rule;
using testing::reduced_shapes;
using testing::registered_op;

struct NK {
  int n, k;
};

// The decode shapes of the benchmark matrix, and leftovers: N not a multiple of any tile,
// K not a multiple of 128.
std::vector<NK> matrix_shapes() {
  if (reduced_shapes())
    return {{512, 1024}};
  return {{4096, 4096}, {6144, 4096}, {14336, 4096}, {4096, 14336},
          {8960, 1536}, {1536, 8960}, {2048, 2048}};
}
std::vector<NK> leftover_shapes() {
  if (reduced_shapes())
    return {{1000, 264}, {77, 136}};
  return {{1000, 4104}, {4100, 1032}, {77, 264}, {4097, 2056}, {1, 8}};
}
std::vector<int> matrix_rows() {
  return reduced_shapes() ? std::vector<int>{1, 5, 32} : std::vector<int>{1, 3, 8, 16, 32};
}
std::vector<int> leftover_rows() { return {1, 7, 32}; }

Shape shape_of(int rows, NK s) { return Shape{{rows, s.n, s.k}, DType::bf16}; }

const TunableOp &gemv_op() { return registered_op("gemv.bf16"); }

class GemvBf16OpTest : public DeviceTest {};

TEST(GemvBf16OpHostTest, OpIdentityAndBuckets) {
  const TunableOp &op = gemv_op();
  EXPECT_EQ(op.name(), "gemv.bf16");
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.version(), 1);
  EXPECT_EQ(op.default_numerics(), Numerics::batch_invariant);
  const Shape b = op.buckets().map(shape_of(12, {4096, 4096})).value();
  EXPECT_EQ(op.buckets().describe(b), "rows=16,n=4096,k=4096");
  EXPECT_EQ(op.buckets().map(shape_of(6, {4096, 4096})).value()[0], 6);
  const std::vector<Tactic> c = op.candidates(b);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), op.default_tactic(b));
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j)
      EXPECT_NE(c[i], c[j]) << "duplicate candidate " << c[i].str();
}

TEST(GemvBf16OpHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = gemv_op();
  expect_invalid(op, Shape{{4, 4096, 1001}, DType::bf16}, "k=1001");
  expect_invalid(op, Shape{{33, 4096, 4096}, DType::bf16}, "rows=33");
  expect_invalid(op, Shape{{0, 4096, 4096}, DType::bf16}, "rows=0");
  expect_invalid(op, Shape{{4, 0, 4096}, DType::bf16}, "n=0");
  expect_invalid(op, Shape{{4, 4096, 4096}, DType::f32}, "f32");
  expect_invalid(op, Shape{{4, 4096}, DType::bf16}, "3 dimensions");
  EXPECT_NO_THROW(op.validate(Shape{{32, 4096, 4104}, DType::bf16}));
}

TEST(GemvBf16OpHostTest, ComparisonCountsPoisonAndMeasuresL2) {
  const std::vector<double> ref{1.0, -2.0, 4.0, 0.5};
  std::vector<uint16_t> y;
  for (double v : ref)
    y.push_back(float_to_bf16(static_cast<float>(v)));
  Bf16Comparison c = compare_bf16(y, ref);
  EXPECT_EQ(c.nan_count, 0u);
  EXPECT_EQ(c.relative_l2, 0.0);
  y[2] = kBf16Poison;
  c = compare_bf16(y, ref);
  EXPECT_EQ(c.nan_count, 1u);
  y[2] = float_to_bf16(4.5f);
  c = compare_bf16(y, ref);
  EXPECT_NEAR(c.relative_l2, 0.5 / std::sqrt(1 + 4 + 16 + 0.25), 1e-12);
  EXPECT_TRUE(bf16_is_nan(kBf16Poison));
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f); // ties to even
}

TEST(GemvBf16OpHostTest, ReferenceIsExactOnSmallIntegers) {
  // X = [[1, 2, ..., 8]], W[j] = all j: Y[j] = 36 j.
  std::vector<uint16_t> x, w;
  for (int i = 1; i <= 8; ++i)
    x.push_back(float_to_bf16(static_cast<float>(i)));
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 8; ++i)
      w.push_back(float_to_bf16(static_cast<float>(j)));
  const std::vector<double> y = gemv_bf16_reference(x, w, 1, 3, 8);
  EXPECT_EQ(y, (std::vector<double>{0, 36, 72}));
}

TEST_F(GemvBf16OpTest, EveryTacticMatchesTheReferenceOnMatrixShapes) {
  const TunableOp &op = gemv_op();
  for (NK s : matrix_shapes())
    for (int rows : matrix_rows())
      EXPECT_GT(check_every_tactic(op, shape_of(rows, s), kGemvBf16RelativeL2Bound), 0)
          << "no tactic ran n=" << s.n << " k=" << s.k << " rows=" << rows;
}

TEST_F(GemvBf16OpTest, EveryTacticMatchesTheReferenceOnLeftoverShapes) {
  const TunableOp &op = gemv_op();
  for (NK s : leftover_shapes())
    for (int rows : leftover_rows())
      EXPECT_GT(check_every_tactic(op, shape_of(rows, s), kGemvBf16RelativeL2Bound), 0)
          << "no tactic ran n=" << s.n << " k=" << s.k << " rows=" << rows;
}

TEST_F(GemvBf16OpTest, PoisonedOutputSurvivesWithoutALaunch) {
  const TunableOp &op = gemv_op();
  std::unique_ptr<Workload> w = op.prepare(shape_of(4, {256, 512}));
  auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
  gw.randomize_inputs();
  gw.poison_output();
  const std::vector<uint16_t> y = gw.download_y();
  const Bf16Comparison c = compare_bf16(y, gw.reference());
  EXPECT_EQ(c.nan_count, y.size());
  for (uint16_t v : y)
    ASSERT_EQ(v, kBf16Poison);
}

TEST_F(GemvBf16OpTest, InputsAreRandomNonZeroAndFreshPerCheck) {
  const TunableOp &op = gemv_op();
  const Shape shape = shape_of(2, {128, 256});
  std::unique_ptr<Workload> w = op.prepare(shape);
  auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
  gw.set_rotation(2);
  const std::vector<uint16_t> w0 = gw.download_w(0);
  const std::vector<uint16_t> w1 = gw.download_w(1);
  EXPECT_NE(w0, w1) << "rotation copies must be independent";
  size_t zeros = 0;
  for (uint16_t v : w0)
    zeros += (v & 0x7fffu) == 0 ? 1 : 0;
  EXPECT_LT(zeros, w0.size() / 100);
  ASSERT_TRUE(
      w->check(op.default_tactic(op.buckets().map(shape).value()), Numerics::tolerance).pass());
  EXPECT_NE(gw.download_w(0), w0) << "check() draws fresh inputs";
}

TEST_F(GemvBf16OpTest, SpillingConfigsAreRejectedWithResources) {
  const TunableOp &op = gemv_op();
  const Shape shape = shape_of(8, {4096, 4096});
  std::unique_ptr<Workload> w = op.prepare(shape);
  int spilling = 0;
  for (const GemvBf16Config &c : gemv_bf16_configs())
    spilling += expect_spill_rule(*w, c.to_tactic(), gemv_bf16_resources(c)) ? 1 : 0;
  std::printf("%zu configs compiled, %d spill\n", gemv_bf16_configs().size(), spilling);
}

TEST_F(GemvBf16OpTest, ForeignTacticCannotRun) {
  const TunableOp &op = gemv_op();
  std::unique_ptr<Workload> w = op.prepare(shape_of(1, {256, 256}));
  std::string reason;
  EXPECT_EQ(w->can_run(Tactic{"gemv.f32", {{"rows_per_block", 4}}}, &reason),
            Status::cannot_implement);
  EXPECT_FALSE(reason.empty());
}

// The dispatcher serves the bucket's default; every row of its output must equal the rows=1
// default's result bit for bit, at every row count.
TEST_F(GemvBf16OpTest, DefaultIsBatchInvariantForRows1To32) {
  const TunableOp &op = gemv_op();
  const std::vector<NK> shapes = reduced_shapes()
                                     ? std::vector<NK>{{512, 1024}}
                                     : std::vector<NK>{{4096, 4096}, {1536, 8960}, {1000, 4104}};
  for (NK s : shapes) {
    for (int rows = 1; rows <= 32; ++rows)
      expect_defaults_batch_invariant(op, shape_of(rows, s),
                                      gemv_bf16_default(rows, s.n, s.k).to_tactic());
  }
}

// A config with another summation order (the CUDA-core path, or other K slicing) is gated
// out of batch-invariant mode by its order alone, whatever one random input shows; it stays
// admissible in tolerance mode.
TEST_F(GemvBf16OpTest, OtherSummationOrderIsGatedInBatchInvariantMode) {
  const TunableOp &op = gemv_op();
  const Shape shape = shape_of(2, NK{1152, 896});
  std::unique_ptr<Workload> w = op.prepare(shape);
  const GemvBf16Config single = gemv_bf16_default(1, 1152, 896);
  int other_order = 0;
  for (const Tactic &t : op.candidates(op.buckets().map(shape).value())) {
    const GemvBf16Config c = GemvBf16Config::from_tactic(t);
    if (c.path == single.path && c.warps_k * c.split_k == single.warps_k * single.split_k)
      continue;
    ++other_order;
    const CheckResult r = w->check(t, Numerics::batch_invariant);
    EXPECT_EQ(r.status, Status::gate_failed) << t.str();
    EXPECT_NE(r.reason.find("summation order"), std::string::npos) << r.reason;
    EXPECT_TRUE(w->check(t, Numerics::tolerance).pass()) << t.str();
  }
  EXPECT_GT(other_order, 0);
}

} // namespace
} // namespace hone::cuda

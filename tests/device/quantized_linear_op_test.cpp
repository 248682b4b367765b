// quantized_linear (cuda): the side per bucket (qmv.affine up to the crossover, qmm.affine
// above), its output bit-identical to the side it names for every row count around the
// crossover, HONE_QMV_MAX_ROWS respected, both sides through the gate, and the tune of a
// bucket that measures both sides, each with its own op's tactic.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/gate/bf16_compare.h"
#include "cuda/kernels/qmm_affine/qmm_affine.h"
#include "cuda/ops/quantized_linear_op.h"
#include "device_test.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/tune.h"
#include "op_test_helpers.h"

namespace hone::cuda {
namespace {

using testing::CacheDirTest;
using testing::expect_invalid;
using testing::reduced_shapes;

Shape shape_of(int rows, int n, int k, int bits, int group) {
  return Shape{{rows, n, k, bits, group}, DType::bf16};
}

const TunableOp &linear_op() { return testing::registered_op("quantized_linear"); }

const Tactic kQmv = quantized_linear_tactic(QuantizedLinearSide::qmv);
const Tactic kQmm = quantized_linear_tactic(QuantizedLinearSide::qmm);

class QuantizedLinearHostTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!qmm_affine_built())
      GTEST_SKIP() << "this build has no qmm.affine kernels (no CUTLASS headers)";
  }
};

// --- host -----------------------------------------------------------------------------------

TEST_F(QuantizedLinearHostTest, OpIdentityBucketsAndSides) {
  const TunableOp &op = linear_op();
  EXPECT_EQ(op.name(), "quantized_linear");
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(kQmv.str(), "quantized_linear.qmv");
  EXPECT_EQ(kQmm.str(), "quantized_linear.qmm");
  EXPECT_EQ(op.compile(kQmv).as<QuantizedLinearSide>(), QuantizedLinearSide::qmv);
  EXPECT_EQ(op.compile(kQmm).as<QuantizedLinearSide>(), QuantizedLinearSide::qmm);
  EXPECT_THROW(op.compile(Tactic::parse("quantized_linear.qmm:split_k=2")), Error);
  EXPECT_THROW(op.compile(Tactic::parse("qmm.affine.wgmma:tile_m=64")), Error);
  const BucketSpec &spec = op.buckets();
  for (int rows = 1; rows <= 32; ++rows)
    EXPECT_EQ(spec.map(shape_of(rows, 4096, 4096, 4, 64)).value()[0], rows);
  EXPECT_EQ(spec.map(shape_of(100, 4096, 4096, 4, 64)).value()[0], 128);
  EXPECT_EQ(spec.map(shape_of(16384, 4096, 4096, 4, 64)).value()[0], 16384);
  EXPECT_FALSE(spec.map(shape_of(16385, 4096, 4096, 4, 64)).has_value());
  expect_invalid(op, shape_of(0, 4096, 4096, 4, 64), "quantized_linear: rows=0");
  expect_invalid(op, shape_of(8, 4096, 4000, 4, 64), "k=4000");
  expect_invalid(op, shape_of(8, 1001, 4096, 4, 64), "n=1001");
}

TEST_F(QuantizedLinearHostTest, CandidatesAreBothSidesWhereQmvCanRun) {
  const TunableOp &op = linear_op();
  for (int rows : {1, 16, 17, 32, 33, 64, 8192}) {
    const Shape b = op.buckets().map(shape_of(rows, 4096, 14336, 4, 64)).value();
    const std::vector<Tactic> c = op.candidates(b);
    EXPECT_EQ(c.front(), rows <= kDefaultQmvMaxRows ? kQmv : kQmm) << "rows=" << rows;
    EXPECT_EQ(c.size(), b[0] <= kQmvMaxRows ? 2u : 1u) << "rows=" << rows;
  }
  EXPECT_EQ(quantized_linear_side(32, 100), QuantizedLinearSide::qmv);
  EXPECT_EQ(quantized_linear_side(33, 100), QuantizedLinearSide::qmm);
  EXPECT_EQ(quantized_linear_side(1, 0), QuantizedLinearSide::qmm);
}

TEST_F(QuantizedLinearHostTest, QmvMaxRowsSettingPicksTheSide) {
  const TunableOp &op = linear_op();
  Settings s;
  EXPECT_FALSE(op.env_override(shape_of(8, 4096, 4096, 4, 64), s).has_value());
  s.qmv_max_rows = 24;
  EXPECT_EQ(op.env_override(shape_of(24, 4096, 4096, 4, 64), s), kQmv);
  EXPECT_EQ(op.env_override(shape_of(25, 4096, 4096, 4, 64), s), kQmm);
  s.qmv_max_rows = 0;
  EXPECT_EQ(op.env_override(shape_of(1, 4096, 4096, 4, 64), s), kQmm);
}

// --- device ------------------------------------------------------------------------------------

class QuantizedLinearTest : public CacheDirTest {
protected:
  QuantizedLinearTest()
      : CacheDirTest("hone-quantized-linear-test-", "HONE_TACTIC_QUANTIZED_LINEAR") {}
  void SetUp() override {
    CacheDirTest::SetUp();
    if (IsSkipped())
      return;
    if (!qmm_affine_built())
      GTEST_SKIP() << "this build has no qmm.affine kernels";
    unsetenv("HONE_QMV_MAX_ROWS");
  }
  void TearDown() override {
    unsetenv("HONE_QMV_MAX_ROWS");
    CacheDirTest::TearDown();
  }

  // Runs quantized_linear and both sides on the same operands through `d`; returns which side
  // quantized_linear's output equals bit for bit (nullopt: neither, a failure).
  std::optional<QuantizedLinearSide> side_taken(Dispatcher &d, int rows, int n, int k) {
    const int bits = 4, group = 64;
    std::unique_ptr<Workload> w = linear_op().prepare(shape_of(rows, n, k, bits, group));
    auto &lw = dynamic_cast<QuantizedLinearWorkload &>(*w);
    const size_t count = static_cast<size_t>(rows) * n;
    DeviceBuffer y(count * 2), y_qmv(count * 2), y_qmm(count * 2);
    for (const DeviceBuffer *b : {&y, &y_qmv, &y_qmm})
      HONE_CUDA_CHECK(cudaMemsetAsync(b->data(), 0xff, b->size(), lw.stream()));
    ops::cuda::quantized_linear(lw.x(0), lw.q(0), lw.scales(0), lw.biases(0), y.data(), rows, n, k,
                                bits, group, lw.stream(), d);
    if (rows <= kQmvMaxRows)
      ops::cuda::qmv_affine(lw.x(0), lw.q(0), lw.scales(0), lw.biases(0), y_qmv.data(), rows, n, k,
                            bits, group, lw.stream(), d);
    ops::cuda::qmm_affine(lw.x(0), lw.q(0), lw.scales(0), lw.biases(0), y_qmm.data(), rows, n, k,
                          bits, group, lw.stream(), d);
    HONE_CUDA_CHECK(cudaStreamSynchronize(lw.stream()));
    const std::vector<uint16_t> got = download<uint16_t>(y.data(), count, lw.stream());
    EXPECT_LE(compare_bf16(lw.checked_rows(got), lw.reference()).relative_l2,
              kAffineLinearRelativeL2Bound);
    // The side the dispatcher resolved for this shape, and its output bit for bit. (On small
    // problems the two sides can round alike, so the output alone cannot always tell them
    // apart: the resolution says which ran, the output that it ran as resolved.)
    const Shape shape = shape_of(rows, n, k, bits, group);
    const bool runs_qmv = d.resolve(linear_op(), shape).compiled.as<QuantizedLinearSide>() ==
                              QuantizedLinearSide::qmv &&
                          rows <= kQmvMaxRows;
    if (got != download<uint16_t>((runs_qmv ? y_qmv : y_qmm).data(), count, lw.stream()))
      return std::nullopt;
    return runs_qmv ? QuantizedLinearSide::qmv : QuantizedLinearSide::qmm;
  }
};

// With an empty cache every bucket runs its default side: qmv up to kDefaultQmvMaxRows rows.
TEST_F(QuantizedLinearTest, OutputIsTheQmvPathUpToTheCrossoverAndQmmAbove) {
  Dispatcher d(backend(), DispatcherOptions::from_env());
  const int n = reduced_shapes() ? 512 : 4096, k = reduced_shapes() ? 1024 : 4096;
  for (int rows : {1, 8, kDefaultQmvMaxRows, kDefaultQmvMaxRows + 1, 32, 33, 40, 64, 100}) {
    const std::optional<QuantizedLinearSide> side = side_taken(d, rows, n, k);
    ASSERT_TRUE(side.has_value()) << "rows=" << rows << " matches neither side";
    EXPECT_EQ(*side,
              rows <= kDefaultQmvMaxRows ? QuantizedLinearSide::qmv : QuantizedLinearSide::qmm)
        << "rows=" << rows;
  }
}

TEST_F(QuantizedLinearTest, QmvMaxRowsIsRespected) {
  const int n = 512, k = 1024;
  for (int crossover : {0, 5, 24, 100}) {
    ASSERT_EQ(setenv("HONE_QMV_MAX_ROWS", std::to_string(crossover).c_str(), 1), 0);
    Dispatcher d(backend(), DispatcherOptions::from_env());
    for (int rows : {1, 5, 6, 24, 25, 32, 33}) {
      const std::optional<QuantizedLinearSide> side = side_taken(d, rows, n, k);
      ASSERT_TRUE(side.has_value()) << "rows=" << rows;
      const bool qmv = rows <= crossover && rows <= kQmvMaxRows;
      EXPECT_EQ(*side, qmv ? QuantizedLinearSide::qmv : QuantizedLinearSide::qmm)
          << "HONE_QMV_MAX_ROWS=" << crossover << " rows=" << rows;
    }
  }
}

TEST_F(QuantizedLinearTest, BothSidesPassTheGate) {
  const TunableOp &op = linear_op();
  for (int rows : {1, 7, 32, 64}) {
    std::unique_ptr<Workload> w = op.prepare(shape_of(rows, 1536, 8960, 4, 128));
    auto &lw = dynamic_cast<QuantizedLinearWorkload &>(*w);
    EXPECT_FALSE(lw.qmm_tactic().empty());
    EXPECT_EQ(lw.qmv_tactic().empty(), rows > kQmvMaxRows);
    for (const Tactic &t : {kQmv, kQmm}) {
      std::string why;
      if (rows > kQmvMaxRows && t == kQmv) {
        EXPECT_EQ(w->can_run(t, &why), Status::cannot_implement);
        continue;
      }
      const CheckResult r = w->check(t, Numerics::tolerance);
      EXPECT_TRUE(r.pass()) << "rows=" << rows << " " << t.str() << ": " << r.reason;
    }
  }
}

// The tune of a bucket around the crossover measures both sides, each with the tactic its own
// op resolves (here the defaults: the cache is empty), and records the faster.
TEST_F(QuantizedLinearTest, TuneMeasuresBothSides) {
  const TunableOp &op = linear_op();
  const Shape bucket = op.buckets().map(shape_of(24, 4096, 4096, 4, 128)).value();
  TuneOptions options;
  options.tuner.samples = 5;
  const TuneReport report = tune_bucket(backend(), op, bucket, options);
  ASSERT_EQ(report.result.candidates.size(), 2u);
  for (const CandidateReport &c : report.result.candidates) {
    EXPECT_EQ(c.status, Status::ok) << c.tactic.str() << ": " << c.reason;
    EXPECT_GT(c.median_s, 0) << c.tactic.str();
    std::printf("rows=24: %s %.2f us\n", c.tactic.str().c_str(), c.median_s * 1e6);
  }
}

} // namespace
} // namespace hone::cuda

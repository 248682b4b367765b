#include "cpu/gemv_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "cpu/check_util.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemv_f32_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cpu.h"

namespace hone::cpu {
namespace {

std::vector<double> reference(const std::vector<float> &x, const std::vector<float> &w,
                              int64_t rows, int64_t n, int64_t k) {
  std::vector<double> y(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j)
        s += double(x[static_cast<size_t>(r * k + j)]) * double(w[static_cast<size_t>(c * k + j)]);
      y[static_cast<size_t>(r * n + c)] = s;
    }
  return y;
}

// Every register blocking, unroll and thread count the kernel accepts, against the float64
// reference, on shapes whose n and k are no multiple of any block or unroll; the output
// starts as NaN, so an element left unwritten fails too.
TEST(GemvF32Kernel, EveryConfigMatchesReferenceOnLeftoverShapes) {
  const int64_t n = 37, k = 67;
  for (int64_t rows : {1, 3, 8, 17, 32}) {
    std::vector<float> x(static_cast<size_t>(rows * k)), w(static_cast<size_t>(n * k));
    fill_uniform(x, 1 + rows);
    fill_uniform(w, 2 + rows);
    const std::vector<double> ref = reference(x, w, rows, n, k);
    std::vector<float> y(static_cast<size_t>(rows * n));
    for (int rb : {1, 2, 4, 8})
      for (int cb : {1, 2, 4, 8})
        for (int u : {4, 8, 16})
          for (int threads : {1, 3}) {
            const GemvConfig c{rb, cb, u, threads};
            poison(y);
            gemv_f32_kernel(c, x.data(), w.data(), y.data(), rows, n, k);
            const CheckResult r = compare_tolerance(y, ref, f32_dot_bound(k));
            ASSERT_TRUE(r.pass()) << c.tactic().str() << " rows=" << rows << ": " << r.reason;
          }
  }
}

TEST(GemvF32Op, EveryCandidatePassesTheGate) {
  GemvF32Op op;
  for (int64_t rows : {1, 3, 8, 17, 32})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 67}, {64, 1000}, {5, 3}}) {
      const Shape shape{{rows, n, k}, DType::f32};
      const std::optional<Shape> bucket = op.buckets().map(shape);
      ASSERT_TRUE(bucket);
      auto w = op.prepare(shape);
      for (const Tactic &t : op.candidates(*bucket)) {
        const CheckResult r = w->check(t, Numerics::tolerance);
        EXPECT_TRUE(r.pass()) << t.str() << " rows=" << rows << " n=" << n << " k=" << k << ": "
                              << r.reason;
        EXPECT_LE(r.error, r.bound);
        EXPECT_GT(r.bound, 0);
      }
    }
}

TEST(GemvF32Op, CandidatesAreFewDistinctAndDefaultFirst) {
  GemvF32Op op;
  for (int64_t rows : op.buckets().dims[0].representatives()) {
    const Shape bucket{{rows, 4096, 4096}, DType::f32};
    const std::vector<Tactic> c = op.candidates(bucket);
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c.front(), op.default_tactic(bucket));
    EXPECT_LE(c.size(), 16u);
    std::set<std::string> distinct;
    for (const Tactic &t : c)
      distinct.insert(t.str());
    EXPECT_EQ(distinct.size(), c.size());
    for (const Tactic &t : c) {
      EXPECT_EQ(t.kernel, "gemv.f32");
      EXPECT_FALSE(GemvConfig::invalid_reason(t)) << t.str();
      EXPECT_LE(t.param("rows_per_block"), std::max<int64_t>(rows, 1)) << t.str();
    }
  }
}

TEST(GemvF32Op, BatchInvariantGateDetectsAnotherSummationOrder) {
  GemvF32Op op;
  const Shape shape{{8, 64, 1000}, DType::f32};
  auto w = op.prepare(shape);
  const GemvConfig def = GemvConfig::from(op.default_tactic(shape));
  // Same k_unroll, other blocking and threads: same order, so bit-identical rows.
  for (GemvConfig same : {GemvConfig{8, 1, def.k_unroll, 1}, GemvConfig{1, 4, def.k_unroll, 2},
                          GemvConfig{4, 4, def.k_unroll, 3}}) {
    const CheckResult r = w->check(same.tactic(), Numerics::batch_invariant);
    EXPECT_TRUE(r.pass()) << same.tactic().str() << ": " << r.reason;
    EXPECT_EQ(r.error, 0);
  }
  // Another k_unroll sums in another order: within tolerance, but not bit-identical.
  for (int u : {4, 16}) {
    const Tactic other = GemvConfig{def.rows_per_block, def.cols_per_block, u, 1}.tactic();
    EXPECT_TRUE(w->check(other, Numerics::tolerance).pass());
    const CheckResult r = w->check(other, Numerics::batch_invariant);
    EXPECT_EQ(r.status, Status::gate_failed) << other.str();
    EXPECT_GT(r.error, 0);
    EXPECT_NE(r.reason.find("differ"), std::string::npos);
  }
}

TEST(GemvF32Op, GateCatchesUnwrittenOutputAndErrorsAboveBound) {
  std::vector<float> poisoned(5, 1.0f);
  poison(poisoned);
  EXPECT_EQ(first_nan(poisoned), 0);
  for (float v : poisoned)
    EXPECT_TRUE(std::isnan(v));
  std::vector<float> y = {1.0f, std::nanf(""), 3.0f};
  const std::vector<double> ref = {1.0, 2.0, 3.0};
  const CheckResult nan = compare_tolerance(y, ref, 1e-5);
  EXPECT_EQ(nan.status, Status::gate_failed);
  EXPECT_NE(nan.reason.find("element 1"), std::string::npos);
  y[1] = 2.0f + 1e-3f;
  EXPECT_EQ(compare_tolerance(y, ref, 1e-5).status, Status::gate_failed);
  y[1] = 2.0f;
  EXPECT_TRUE(compare_tolerance(y, ref, 1e-5).pass());
  // Dropping one term of every length-k dot product (relative error ~ 1/sqrt(k)) stays at
  // least 8x above the bound up to k = 2^18.
  for (int64_t k : {1, 64, 4096, 32768, 1 << 18})
    EXPECT_LE(f32_dot_bound(k), 0.125 / std::sqrt(double(k)));
}

TEST(GemvF32Op, WorkloadReportsBytesAndRotates) {
  GemvF32Op op;
  auto w = op.prepare(Shape{{4, 100, 50}, DType::f32});
  EXPECT_EQ(w->bytes_per_launch(), size_t(100 * 50 + 4 * 50 + 4 * 100) * 4);
  EXPECT_EQ(w->rotation(), 1);
  w->set_rotation(3);
  EXPECT_EQ(w->rotation(), 3);
  const Tactic t = op.default_tactic(Shape{{4, 100, 50}, DType::f32});
  for (int copy = 0; copy < 3; ++copy)
    w->run(t, copy);
  std::string reason;
  EXPECT_EQ(w->can_run(Tactic::parse("gemv.f32:rows_per_block=3"), &reason),
            Status::cannot_implement);
  EXPECT_NE(reason.find("rows_per_block=3"), std::string::npos);
  EXPECT_EQ(w->check(Tactic::parse("qmv.affine:threads=1"), Numerics::tolerance).status,
            Status::cannot_implement);
}

TEST(GemvF32Op, ValidateNamesTheBadValue) {
  GemvF32Op op;
  EXPECT_NO_THROW(op.validate(Shape{{1, 1, 1}, DType::f32}));
  try {
    op.validate(Shape{{2, 0, 8}, DType::f32});
    FAIL() << "n=0 accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("n=0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(op.validate(Shape{{2, 8}, DType::f32}), Error);
  EXPECT_THROW(op.validate(Shape{{2, 8, 8}, DType::bf16}), Error);
}

TEST(GemvF32Entry, RunsTheDispatchedTacticOnCallerBuffers) {
  DispatcherOptions options;
  options.use_cache = false;
  Dispatcher d(backend(), options);
  const int64_t rows = 3, n = 45, k = 130;
  std::vector<float> x(rows * k), w(n * k), y(rows * n), expected(rows * n);
  fill_uniform(x, 7);
  fill_uniform(w, 8);
  poison(y);
  ops::cpu::gemv_f32(x.data(), w.data(), y.data(), rows, n, k, d);
  GemvF32Op op;
  gemv_f32_kernel(GemvConfig::from(op.default_tactic(Shape{{rows, n, k}, DType::f32})), x.data(),
                  w.data(), expected.data(), rows, n, k);
  EXPECT_EQ(count_bit_mismatches(y, expected), 0);
  EXPECT_THROW(ops::cpu::gemv_f32(x.data(), w.data(), y.data(), 0, n, k, d), Error);
}

} // namespace
} // namespace hone::cpu

// gemv.bf16 (cuda): every tactic against the float64 reference on fresh random inputs,
// leftover shapes, the poison/NaN gate, the spill rule, and batch invariance of the default;
// the vendor tactics (cuBLASLt): tolerance mode only, gated and timed by a tune, run by the
// entry point, the heuristic tactic bit-identical to cuBLASLt's own choice at each row count,
// and an algorithm this cuBLASLt cannot run ignored like a stale entry; the gate/up linear with
// SiLU x up in its epilogue, bit for bit the linear followed by silu_mul.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/gate/bf16_compare.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/ops/gemv_bf16_reference.h"
#include "cuda/ops/gemv_bf16_vendor.h"
#include "cuda/peers/cublaslt_bf16_gemm.h"
#include "device_test.h"
#include "hone/cache.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/log.h"
#include "hone/ops/cuda.h"
#include "hone/tune.h"
#include "hone/tuning_store.h"
#include "op_test_helpers.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::check_every_tactic;
using testing::DeviceTest;
using testing::expect_default_first_and_distinct;
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
  EXPECT_EQ(op.version(), 2); // 2: the fill floor of the default's K split
  EXPECT_EQ(op.default_numerics(), Numerics::batch_invariant);
  const Shape b = op.buckets().map(shape_of(12, {4096, 4096})).value();
  EXPECT_EQ(op.buckets().describe(b), "rows=16,n=4096,k=4096");
  EXPECT_EQ(op.buckets().map(shape_of(6, {4096, 4096})).value()[0], 6);
  const std::vector<Tactic> c = op.candidates(b);
  ASSERT_FALSE(c.empty());
  expect_default_first_and_distinct(c, op.default_tactic(b));
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
  for (const Tactic &t :
       op.tune_candidates(op.buckets().map(shape).value(), Numerics::batch_invariant)) {
    const GemvBf16Config c = GemvBf16Config::from_tactic(t);
    // The ring path computes the mma path's order: the same order where k_slices match.
    const KernelPath family = c.path == KernelPath::ring ? KernelPath::mma : c.path;
    if (family == single.path && c.warps_k * c.split_k == single.warps_k * single.split_k)
      continue;
    ++other_order;
    const CheckResult r = w->check(t, Numerics::batch_invariant);
    EXPECT_EQ(r.status, Status::gate_failed) << t.str();
    EXPECT_NE(r.reason.find("summation order"), std::string::npos) << r.reason;
    EXPECT_TRUE(w->check(t, Numerics::tolerance).pass()) << t.str();
  }
  EXPECT_GT(other_order, 0);
}

// --- vendor tactics (cuBLASLt) ------------------------------------------------------------

// The vendor tactics of a tolerance tune of `bucket`.
std::vector<Tactic> vendor_tactics(const TunableOp &op, const Shape &bucket) {
  std::vector<Tactic> out;
  for (const Tactic &t : op.tune_candidates(bucket, Numerics::tolerance))
    if (op.is_vendor_tactic(t))
      out.push_back(t);
  return out;
}

// A vendor tactic no cuBLASLt lists: an algorithm id far beyond any cuBLASLt's.
Tactic unavailable_vendor_tactic() {
  GemvBf16VendorConfig c;
  c.algo.algo = 2147483000;
  c.algo.tile = 4000;
  return c.to_tactic();
}

// The warnings logged while it lives.
class WarningLog {
public:
  WarningLog() {
    set_log_sink([this](LogLevel level, std::string_view m) {
      if (level == LogLevel::warn)
        warnings_.emplace_back(m);
    });
  }
  ~WarningLog() { set_log_sink({}); }
  WarningLog(const WarningLog &) = delete;
  WarningLog &operator=(const WarningLog &) = delete;
  // How many warnings hold `needle`.
  int count(const std::string &needle) const {
    int n = 0;
    for (const std::string &w : warnings_)
      n += w.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

private:
  std::vector<std::string> warnings_;
};

// Y from the entry point for copy 0 of `gw`'s inputs, dispatched by `d`.
std::vector<uint16_t> entry_point_output(GemvBf16Workload &gw, Dispatcher &d) {
  HONE_CUDA_CHECK(cudaStreamSynchronize(gw.stream()));
  DeviceBuffer y(static_cast<size_t>(gw.rows()) * static_cast<size_t>(gw.n()) * sizeof(uint16_t));
  HONE_CUDA_CHECK(cudaMemset(y.data(), 0xff, y.size()));
  ops::cuda::gemv_bf16(gw.x(0), gw.w(0), y.data(), gw.rows(), gw.n(), gw.k(), nullptr, d);
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> out(y.size() / sizeof(uint16_t));
  HONE_CUDA_CHECK(cudaMemcpy(out.data(), y.data(), y.size(), cudaMemcpyDeviceToHost));
  return out;
}

// A dispatcher without a cache whose HONE_TACTIC_CUDA_GEMV_BF16 is `tactic`.
DispatcherOptions override_options(const Tactic &tactic) {
  DispatcherOptions o;
  o.use_cache = false;
  o.settings.use_cache = false;
  o.settings.tactics[tactic_env_name("cuda", "gemv.bf16")] = tactic.str();
  return o;
}

// cuBLASLt offers algorithms for every decode shape; each is a candidate of a tolerance tune
// only, passes the gate against the float64 reference, and fails the batch-invariant gate
// (it promises no order); a cached pick of it is runnable.
TEST_F(GemvBf16OpTest, VendorCandidatesAreToleranceOnlyAndMatchTheReference) {
  const TunableOp &op = gemv_op();
  const std::vector<std::pair<int, NK>> shapes =
      reduced_shapes() ? std::vector<std::pair<int, NK>>{{1, {512, 1024}}, {8, {1000, 264}}}
                       : std::vector<std::pair<int, NK>>{{1, {4096, 4096}},
                                                         {8, {14336, 4096}},
                                                         {16, {1536, 8960}},
                                                         {32, {4096, 4096}},
                                                         {3, {1000, 4104}}};
  for (const auto &[rows, nk] : shapes) {
    const Shape shape = shape_of(rows, nk);
    const Shape bucket = op.buckets().map(shape).value();
    for (const Tactic &t : op.tune_candidates(bucket, Numerics::batch_invariant))
      EXPECT_FALSE(op.is_vendor_tactic(t)) << t.str();
    const std::vector<Tactic> vendor = vendor_tactics(op, bucket);
    EXPECT_GE(vendor.size(), 1u) << op.buckets().describe(bucket);
    EXPECT_LE(vendor.size(), static_cast<size_t>(kGemvBf16VendorCandidates));
    std::unique_ptr<Workload> w = op.prepare(shape);
    for (const Tactic &t : vendor) {
      EXPECT_EQ(op.unrunnable_reason(t, bucket), std::nullopt) << t.str();
      std::string reason;
      ASSERT_EQ(w->can_run(t, &reason), Status::ok) << t.str() << ": " << reason;
      const CheckResult r = w->check(t, Numerics::tolerance);
      EXPECT_TRUE(r.pass()) << t.str() << ": " << r.reason;
      EXPECT_LE(r.error, kGemvBf16RelativeL2Bound) << t.str();
      const CheckResult bi = w->check(t, Numerics::batch_invariant);
      EXPECT_EQ(bi.status, Status::gate_failed) << t.str();
      std::printf("%s: %s error %.2e\n", op.buckets().describe(bucket).c_str(), t.str().c_str(),
                  r.error);
    }
  }
}

// A tolerance tune gates and times every vendor candidate in the same round as hone's kernels,
// and names hone's own best apart; a batch-invariant tune has none of them.
TEST_F(GemvBf16OpTest, ToleranceTuneGatesAndTimesTheVendorCandidates) {
  const TunableOp &op = gemv_op();
  const Shape bucket = reduced_shapes() ? shape_of(16, {512, 1024}) : shape_of(16, {4096, 4096});
  TuneOptions options;
  options.tuner.samples = 5;
  options.numerics = Numerics::tolerance;
  const TuneReport report = tune_bucket(cuda_backend(), op, bucket, options);
  EXPECT_EQ(report.numerics, Numerics::tolerance);
  const TuneResult &r = report.result;
  int vendor = 0;
  for (const CandidateReport &c : r.candidates) {
    if (!op.is_vendor_tactic(c.tactic))
      continue;
    ++vendor;
    EXPECT_EQ(c.status, Status::ok) << c.tactic.str() << ": " << c.reason;
    EXPECT_GT(c.median_s, 0) << c.tactic.str();
  }
  EXPECT_GE(vendor, 1);
  const std::optional<size_t> own = best_own_index(op, r);
  ASSERT_TRUE(own.has_value());
  EXPECT_FALSE(op.is_vendor_tactic(r.candidates[*own].tactic));
  EXPECT_GT(r.candidates[*own].median_s, 0);
  std::printf("tolerance tune %s: pick %s (%.2f us), best own %s (%.2f us triage)\n",
              report.bucket_text.c_str(), r.pick().str().c_str(), r.pick_s * 1e6,
              r.candidates[*own].tactic.str().c_str(), r.candidates[*own].median_s * 1e6);

  options.numerics = Numerics::batch_invariant;
  const TuneReport invariant = tune_bucket(cuda_backend(), op, bucket, options);
  for (const CandidateReport &c : invariant.result.candidates)
    EXPECT_FALSE(op.is_vendor_tactic(c.tactic)) << c.tactic.str();
}

// The entry point (the C API's and Python's path) runs a resolved vendor tactic: through
// cuBLASLt, not the fallback, and within the gate's bound of the float64 reference.
TEST_F(GemvBf16OpTest, VendorTacticRunsThroughTheEntryPoint) {
  const TunableOp &op = gemv_op();
  const NK nk = reduced_shapes() ? NK{512, 1024} : NK{4096, 4096};
  for (int rows : {1, 8, 16}) {
    const Shape shape = shape_of(rows, nk);
    const Shape bucket = op.buckets().map(shape).value();
    const std::vector<Tactic> vendor = vendor_tactics(op, bucket);
    ASSERT_FALSE(vendor.empty()) << op.buckets().describe(bucket);
    std::unique_ptr<Workload> w = op.prepare(shape);
    auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
    gw.randomize_inputs();
    const std::vector<double> ref = gw.reference();
    for (const Tactic &t : vendor) {
      WarningLog log;
      Dispatcher d(cuda_backend(), override_options(t));
      const std::vector<uint16_t> y = entry_point_output(gw, d);
      const Resolution &r = d.resolve(entry_op<GemvBf16Op>(), shape);
      EXPECT_EQ(r.source, Source::env_override);
      EXPECT_EQ(r.tactic, t);
      ASSERT_NE(r.compiled.get_if<GemvBf16VendorConfig>(), nullptr) << t.str();
      EXPECT_EQ(log.count("cannot run"), 0) << t.str() << " fell back to the default";
      const Bf16Comparison c = compare_bf16(y, ref);
      EXPECT_EQ(c.nan_count, 0u) << t.str();
      EXPECT_LE(c.relative_l2, kGemvBf16RelativeL2Bound) << t.str();
    }
  }
}

// A bucket's vendor tactic on another row count of the bucket (rows 12 in bucket 16): cuBLASLt
// runs the same algorithm or, where it cannot, the default runs with one warning; the output
// is right either way.
TEST_F(GemvBf16OpTest, BucketVendorTacticServesEveryRowCountOfTheBucket) {
  const TunableOp &op = gemv_op();
  const NK nk = reduced_shapes() ? NK{512, 1024} : NK{4096, 4096};
  const Shape shape = shape_of(12, nk);
  const std::vector<Tactic> vendor = vendor_tactics(op, op.buckets().map(shape).value());
  ASSERT_FALSE(vendor.empty());
  std::unique_ptr<Workload> w = op.prepare(shape);
  auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
  gw.randomize_inputs();
  const std::vector<double> ref = gw.reference();
  for (const Tactic &t : vendor) {
    WarningLog log;
    Dispatcher d(cuda_backend(), override_options(t));
    const Bf16Comparison c = compare_bf16(entry_point_output(gw, d), ref);
    EXPECT_EQ(c.nan_count, 0u) << t.str();
    EXPECT_LE(c.relative_l2, kGemvBf16RelativeL2Bound) << t.str();
    EXPECT_LE(log.count("cannot run"), 1) << t.str();
    std::printf("rows=12 with %s: %s\n", t.str().c_str(),
                log.count("cannot run") ? "default (fallback)" : "cuBLASLt");
  }
}

// The heuristic tactic at row counts its bucket was not tuned at (12 in bucket 16, 24 in 32)
// runs what cuBLASLt's heuristic gives for that row count: bit for bit the output of cuBLASLt
// called directly with its own choice (the "cublas" peer of the benchmarks).
TEST_F(GemvBf16OpTest, HeuristicVendorTacticRunsCublasLtsChoiceForEachRowCount) {
  const NK nk = reduced_shapes() ? NK{512, 1024} : NK{4096, 4096};
  for (int rows : {12, 24}) {
    const Shape shape = shape_of(rows, nk);
    std::unique_ptr<Workload> w = gemv_op().prepare(shape);
    auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
    gw.randomize_inputs();
    WarningLog log;
    Dispatcher d(cuda_backend(), override_options(gemv_bf16_vendor_heuristic().to_tactic()));
    const std::vector<uint16_t> y = entry_point_output(gw, d);
    EXPECT_EQ(log.count("cannot run"), 0) << "rows " << rows;

    CublasLtBf16Gemm peer(rows, nk.n, nk.k);
    const std::vector<CublasLtAlgoId> listed = gemv_bf16_vendor_algos(rows, nk.n, nk.k);
    ASSERT_FALSE(listed.empty());
    EXPECT_EQ(peer.algo_id(), listed.front()) << "rows " << rows;
    DeviceBuffer yp(y.size() * sizeof(uint16_t));
    HONE_CUDA_CHECK(cudaMemset(yp.data(), 0xff, yp.size()));
    peer.run(gw.x(0), gw.w(0), yp.data(), nullptr);
    HONE_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> expected(y.size());
    HONE_CUDA_CHECK(cudaMemcpy(expected.data(), yp.data(), yp.size(), cudaMemcpyDeviceToHost));
    size_t differ = 0;
    for (size_t i = 0; i < y.size(); ++i)
      differ += y[i] != expected[i] ? 1 : 0;
    EXPECT_EQ(differ, 0u) << "rows " << rows << ": " << peer.algo_id().str();
  }
}

// An algorithm this cuBLASLt does not list (a cache from another cuBLASLt version) is never
// run: the cached entry is unrunnable, the dispatcher warns and serves the default, and an
// explicit override of it runs the default with a warning.
TEST_F(GemvBf16OpTest, AnUnavailableVendorAlgoIsIgnoredLikeAStaleEntry) {
  const TunableOp &op = gemv_op();
  const int rows = 4;
  const NK nk{1024, 2048};
  const Shape shape = shape_of(rows, nk);
  const Shape bucket = op.buckets().map(shape).value();
  const Tactic bogus = unavailable_vendor_tactic();
  ASSERT_TRUE(op.unrunnable_reason(bogus, bucket).has_value());

  std::unique_ptr<Workload> w = op.prepare(shape);
  std::string reason;
  EXPECT_EQ(w->can_run(bogus, &reason), Status::cannot_implement);
  EXPECT_NE(reason.find("2147483000"), std::string::npos) << reason;

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hone-gemv-vendor-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "tuning-cache.json";
  {
    Backend &be = cuda_backend();
    Cache cache(path);
    cache.load();
    CacheEntry e;
    e.key = cache_key(op, bucket, be.info().model);
    e.metadata = current_metadata(be, /*cold=*/true);
    e.tactic = bogus.str();
    e.default_tactic = op.default_tactic(bucket).str();
    e.median_s = e.default_s = 1e-5;
    e.mode = "cold";
    e.date = "2026-12-01T00:00:00Z";
    cache.put(e);
    cache.save();
  }
  EXPECT_EQ(TuningStore(cuda_backend(), path).find(op, bucket).status, Lookup::unrunnable);

  auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
  gw.randomize_inputs();
  const std::vector<double> ref = gw.reference();
  {
    WarningLog log;
    DispatcherOptions options;
    options.cache_path = path;
    Dispatcher d(cuda_backend(), options);
    const Bf16Comparison c = compare_bf16(entry_point_output(gw, d), ref);
    const Resolution &r = d.resolve(entry_op<GemvBf16Op>(), shape);
    EXPECT_EQ(r.source, Source::default_tactic);
    EXPECT_EQ(r.tactic, op.default_tactic(bucket));
    EXPECT_EQ(log.count("cannot run"), 1);
    EXPECT_EQ(c.nan_count, 0u);
    EXPECT_LE(c.relative_l2, kGemvBf16RelativeL2Bound);
  }
  {
    WarningLog log;
    Dispatcher d(cuda_backend(), override_options(bogus));
    const Bf16Comparison c = compare_bf16(entry_point_output(gw, d), ref);
    EXPECT_EQ(log.count("cannot run"), 1);
    EXPECT_EQ(c.nan_count, 0u);
    EXPECT_LE(c.relative_l2, kGemvBf16RelativeL2Bound);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// The gate/up linear with SiLU x up in its epilogue (ops::cuda::gemv_bf16_silu_mul) gives the
// bits of gemv_bf16 on [W_gate; W_up] followed by silu_mul, for every mma config that takes the
// shape (inter not a multiple of the CTA's rows included), into a poisoned output; a tactic of
// another path launches nothing and says so.
TEST_F(GemvBf16OpTest, SiluEpilogueGivesTheLinearThenSiluMulBitForBit) {
  struct Case {
    int rows, inter, k;
  };
  const std::vector<Case> cases =
      reduced_shapes()
          ? std::vector<Case>{{1, 256, 1024}, {5, 40, 264}, {32, 264, 136}}
          : std::vector<Case>{
                {1, 1536, 2048}, {4, 40, 264}, {16, 4104, 1032}, {32, 8960, 1536}, {7, 264, 4104}};
  int checked = 0;
  for (const Case &c : cases) {
    const int n = 2 * c.inter;
    const std::vector<uint16_t> x = testing::random_bf16(size_t(c.rows) * c.k);
    const std::vector<uint16_t> w = testing::random_bf16(size_t(n) * c.k);
    DeviceBuffer dx = testing::upload(x), dw = testing::upload(w);
    const size_t out = size_t(c.rows) * c.inter;
    for (const GemvBf16Config &config : gemv_bf16_configs()) {
      if (!gemv_bf16_can_implement(config, c.rows, n, c.k, nullptr))
        continue;
      const std::string where = config.to_tactic().str() + " rows=" + std::to_string(c.rows) +
                                " inter=" + std::to_string(c.inter) + " k=" + std::to_string(c.k);
      Dispatcher d(cuda_backend(), override_options(config.to_tactic()));
      DeviceBuffer fused = testing::poisoned(out * 2);
      const bool ran = ops::cuda::gemv_bf16_silu_mul(dx.data(), dw.data(), fused.data(), c.rows,
                                                     c.inter, c.k, nullptr, d);
      const std::vector<uint16_t> y = testing::download_bf16(fused, out);
      if (config.path != KernelPath::mma) {
        EXPECT_FALSE(ran) << where;
        EXPECT_EQ(size_t(std::count(y.begin(), y.end(), kBf16Poison)), out) << where;
        continue;
      }
      ASSERT_TRUE(ran) << where;
      DeviceBuffer gate_up = testing::poisoned(size_t(c.rows) * n * 2);
      ops::cuda::gemv_bf16(dx.data(), dw.data(), gate_up.data(), c.rows, n, c.k, nullptr, d);
      const std::vector<uint16_t> want =
          testing::separate_silu_mul(gate_up.data(), c.rows, c.inter);
      EXPECT_EQ(std::count(want.begin(), want.end(), kBf16Poison), 0) << where;
      EXPECT_EQ(y, want) << where;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
  std::printf("%d mma configs x shapes checked\n", checked);
}

} // namespace
} // namespace hone::cuda

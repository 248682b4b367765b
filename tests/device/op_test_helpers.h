// Shared by the device tests of the CUDA ops (gemv.bf16, qmv.affine): the registered op, every
// candidate of a bucket through the gate, batch invariance of the defaults, the sampled
// reference of an op, the spill rule, validation messages, a workload of no op, the
// tuner end to end through the cache, and a fixture with a temporary HONE_CACHE_DIR.
//
//   const TunableOp &op = registered_op("qmv.affine");
//   EXPECT_GT(check_every_tactic(op, shape, kQmvAffineRelativeL2Bound), 0);
//   expect_invalid(op, bad_shape, "rows=33");
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "cuda/gate/bf16_compare.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h" // KernelResources
#include "device_test.h"
#include "hone/cache.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/op.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/tune.h"

namespace hone::cuda::testing {

// The op registered under `name` for the "cuda" backend (a test failure when there is none).
inline const TunableOp &registered_op(const char *name) {
  const TunableOp *op = Registry::global().find(name, "cuda");
  EXPECT_NE(op, nullptr);
  return *op;
}

// Checks every candidate of the shape's bucket at that shape in tolerance mode, each within
// `bound`; returns how many ran.
inline int check_every_tactic(const TunableOp &op, const Shape &shape, double bound) {
  const Shape bucket = op.buckets().map(shape).value();
  std::unique_ptr<Workload> w = op.prepare(shape);
  int ran = 0;
  for (const Tactic &t : op.candidates(bucket)) {
    std::string reason;
    const Status can = w->can_run(t, &reason);
    if (can != Status::ok) {
      // Bucket candidates need not all fit a smaller row count of the bucket; spilling
      // configs are refused by the backend rule (SpillingConfigsAreRejectedWithResources).
      if (can == Status::rejected)
        std::printf("rejected %s: %s\n", t.str().c_str(), reason.c_str());
      continue;
    }
    const CheckResult r = w->check(t, Numerics::tolerance);
    EXPECT_TRUE(r.pass()) << op.buckets().describe(shape) << " " << t.str() << ": "
                          << to_string(r.status) << ": " << r.reason;
    EXPECT_LE(r.error, bound) << t.str();
    ++ran;
  }
  return ran;
}

// The bucket's default and, where it differs, `exact` (the default of the exact shape) must
// pass the batch-invariant gate at `shape`: every row bitwise equal to the rows=1 default's.
inline void expect_defaults_batch_invariant(const TunableOp &op, const Shape &shape,
                                            const Tactic &exact) {
  std::unique_ptr<Workload> w = op.prepare(shape);
  std::vector<Tactic> defaults{op.default_tactic(op.buckets().map(shape).value())};
  if (!(exact == defaults.front()))
    defaults.push_back(exact);
  for (const Tactic &t : defaults) {
    const CheckResult r = w->check(t, Numerics::batch_invariant);
    EXPECT_TRUE(r.pass()) << op.buckets().describe(shape) << " " << t.str() << ": " << r.reason;
    EXPECT_EQ(r.error, 0) << t.str();
  }
}

// The sampled reference of an op's workload `W` at `shape`, more rows than it covers:
// reference_rows() is `count` rows, ascending and distinct, from Y's first row to its last;
// reference() matches those rows of the default's output (checked_rows()) within `bound` and
// not Y's first `count` rows; the gate passes the default in each of `modes` (an elementwise
// op's both; decode.paged has no batch-invariant mode).
template <class W>
void expect_sampled_reference(const TunableOp &op, const Shape &shape, size_t count, double bound,
                              const std::vector<Numerics> &modes = {Numerics::tolerance,
                                                                    Numerics::batch_invariant}) {
  std::unique_ptr<Workload> w = op.prepare(shape);
  auto &cw = dynamic_cast<W &>(*w);
  const std::vector<int64_t> rows = cw.reference_rows();
  ASSERT_EQ(rows.size(), count) << op.buckets().describe(shape);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), cw.output_rows() - 1);
  for (size_t i = 1; i < rows.size(); ++i)
    ASSERT_LT(rows[i - 1], rows[i]) << "reference_rows()[" << i << "]";
  const Tactic def = op.default_tactic(op.buckets().map(shape).value());
  cw.poison_output();
  cw.run(def, 0);
  const std::vector<uint16_t> y = cw.download_y(); // synchronous: after the launch
  const std::vector<double> ref = cw.reference();
  ASSERT_EQ(ref.size(), count * static_cast<size_t>(cw.output_cols()));
  EXPECT_LE(compare_bf16(cw.checked_rows(y), ref).relative_l2, bound);
  const std::vector<uint16_t> first(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(ref.size()));
  EXPECT_GT(compare_bf16(first, ref).relative_l2, 0.5) << "the sample is Y's first rows";
  for (Numerics numerics : modes) {
    const CheckResult r = w->check(def, numerics);
    EXPECT_TRUE(r.pass()) << def.str() << " " << to_string(numerics) << ": " << r.reason;
  }
}

// The spill rule: can_run(tactic) is `rejected` with the reason "spills: N bytes local memory,
// R registers" when `res` (the resources of the tactic's kernel) shows local memory, and is
// not rejected otherwise. Returns whether the kernel spills.
inline bool expect_spill_rule(const Workload &w, const Tactic &tactic, const KernelResources &res) {
  std::string reason;
  const Status s = w.can_run(tactic, &reason);
  if (res.local_bytes == 0) {
    EXPECT_NE(s, Status::rejected) << tactic.str() << ": " << reason;
    return false;
  }
  EXPECT_EQ(s, Status::rejected) << tactic.str();
  EXPECT_EQ(reason.rfind("spills: " + std::to_string(res.local_bytes) + " bytes local memory, " +
                             std::to_string(res.registers) + " registers",
                         0),
            0u)
      << reason;
  return true;
}

// The candidates of a bucket: the default first, none twice.
inline void expect_default_first_and_distinct(const std::vector<Tactic> &c, const Tactic &def) {
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), def);
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j)
      EXPECT_NE(c[i], c[j]) << "duplicate candidate " << c[i].str();
}

// op.validate(s) must throw Error(invalid_argument) whose message contains `needle`.
inline void expect_invalid(const TunableOp &op, const Shape &s, const std::string &needle) {
  try {
    op.validate(s);
    ADD_FAILURE() << "expected invalid_argument naming " << needle;
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A workload of no op, for peers that must refuse it.
class ForeignWorkload final : public Workload {
public:
  size_t bytes_per_launch() const override { return 0; }
  void set_rotation(int) override {}
  int rotation() const override { return 1; }
  Status can_run(const Tactic &, std::string *) const override { return Status::ok; }
  void run(const Tactic &, int) override {}
  CheckResult check(const Tactic &, Numerics) override { return {}; }
};

// A device test with HONE_CACHE_DIR set to a fresh temporary directory (removed afterwards) and
// HONE_CACHE, HONE_AUTOTUNE and the op's tactic override unset.
//
//   class MyTuneTest : public CacheDirTest {
//   protected:
//     MyTuneTest() : CacheDirTest("hone-my-test-", "HONE_TACTIC_GEMV_BF16") {}
//   };
class CacheDirTest : public DeviceTest {
protected:
  CacheDirTest(std::string dir_prefix, std::string tactic_variable)
      : dir_prefix_(std::move(dir_prefix)), tactic_variable_(std::move(tactic_variable)) {}

  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    dir_ = std::filesystem::temp_directory_path() / (dir_prefix_ + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ASSERT_EQ(setenv("HONE_CACHE_DIR", dir_.c_str(), 1), 0);
    unsetenv("HONE_CACHE");
    unsetenv("HONE_AUTOTUNE");
    unsetenv(tactic_variable_.c_str());
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      unsetenv("HONE_CACHE_DIR");
    }
  }

  std::filesystem::path dir_;

private:
  std::string dir_prefix_, tactic_variable_;
};

// Tunes `bucket` with 5 samples per median and checks the report: batch-invariant numerics,
// the cache key, a batch and rotation, and a default and pick that both ran. Prints a summary.
inline TuneReport tune_and_check(Backend &be, const TunableOp &op, const Shape &bucket) {
  TuneOptions options;
  options.tuner.samples = 5;
  TuneReport report = tune_bucket(be, op, bucket, options);
  EXPECT_EQ(report.numerics, Numerics::batch_invariant);
  EXPECT_EQ(report.key, cache_key(op, bucket, be.info().model));
  EXPECT_GE(report.batch, 1);
  EXPECT_GE(report.rotation.copies, 1);
  const TuneResult &r = report.result;
  EXPECT_EQ(r.candidates[r.default_index].status, Status::ok)
      << r.candidates[r.default_index].reason;
  EXPECT_EQ(r.candidates[r.pick_index].status, Status::ok);
  EXPECT_GT(r.default_s, 0);
  EXPECT_GT(r.pick_s, 0);
  std::printf("tuned %s: %zu candidates, pick %s ratio %.3f (noise floor %.4f, margin %.3f), "
              "default %.2f us, batch %d, copies %d\n",
              report.bucket_text.c_str(), r.candidates.size(), r.pick().str().c_str(), r.ratio,
              r.noise_floor, r.margin, r.default_s * 1e6, report.batch, report.rotation.copies);
  return report;
}

// Stores `report` in the cache under `dir` (HONE_CACHE_DIR), then checks that a new
// dispatcher reloads the file and serves the pick for the raw `shape`, untuned.
inline void expect_served_from_cache(Backend &be, const TunableOp &op, const Shape &shape,
                                     const TuneReport &report, const std::filesystem::path &dir) {
  {
    Cache cache(Cache::default_path(Settings::from_env())); // HONE_CACHE_DIR set by SetUp()
    EXPECT_EQ(cache.path().parent_path(), dir);
    cache.load();
    cache.put(to_cache_entry(report, current_metadata(be)));
    cache.save();
  }
  ASSERT_TRUE(std::filesystem::exists(dir / "tuning-cache.json"));

  Dispatcher dispatcher(be, DispatcherOptions::from_env());
  const Resolution &res = dispatcher.resolve(op, shape);
  EXPECT_EQ(res.source, Source::cache) << to_string(res.source);
  EXPECT_EQ(res.tactic, report.result.pick());
  EXPECT_EQ(res.key, report.key);
  EXPECT_EQ(dispatcher.tunes(), 0u);
  // The memoised answer is the same object.
  EXPECT_EQ(&dispatcher.lookup(op, shape), &res.tactic);
}

} // namespace hone::cuda::testing

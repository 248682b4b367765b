// The shared CPU gate (cpu/cpu_workload.h) on a fake op whose kernel behaviour each test
// chooses: rotation copies hold distinct inputs, every check draws fresh inputs, the output
// is poisoned before the run, and the tolerance bound is f32_dot_bound(k).
#include "cpu/cpu_workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "cpu/check_util.h"
#include "hone/error.h"

namespace hone::cpu {
namespace {

// One input value per copy, derived from its seed; the "kernel" writes value * (1 + error)
// to the outputs it is told to write; the reference is the value.
struct FakeCopy {
  double value = 0;
};

class FakeWorkload final : public CpuWorkloadOf<FakeCopy> {
public:
  static constexpr int64_t kRows = 3, kN = 5, kK = 256;
  FakeWorkload() : CpuWorkloadOf(kRows, kN, kK, 1234) { set_rotation(1); }

  double relative_error = 0; // the kernel's error against the reference
  bool write_outputs = true; // false: the kernel leaves its output untouched
  bool fixed_inputs = false; // true: every fill gives the same value
  std::vector<uint64_t> fill_seeds;
  double value(int copy) const { return copies_.at(static_cast<size_t>(copy)).value; }

  size_t bytes_per_launch() const override { return 0; }

protected:
  std::optional<std::string> invalid_reason(const Tactic &t) const override {
    if (t.kernel != "fake")
      return "kernel '" + t.kernel + "' is not fake";
    return std::nullopt;
  }
  FakeCopy make_copy() const override { return {}; }
  void fill_copy(size_t copy, uint64_t seed) override {
    fill_seeds.push_back(seed);
    copies_[copy].value =
        fixed_inputs ? 1.5 : 1.0 + static_cast<double>(seed % 100003) / 100003.0;
  }
  void run_rows(const Tactic &, int copy, int64_t, int64_t rows, float *y) override {
    if (!write_outputs)
      return;
    for (int64_t i = 0; i < rows * kN; ++i)
      y[i] = static_cast<float>(value(copy) * (1.0 + relative_error));
  }
  void reference(std::vector<double> &out) const override {
    out.assign(static_cast<size_t>(kRows * kN), value(0));
  }
  Tactic single_row_default() const override { return Tactic{"fake", {}}; }
};

const Tactic kFake{"fake", {}};

TEST(CpuWorkload, RotationCopiesHoldDistinctInputs) {
  FakeWorkload w;
  w.set_rotation(4);
  EXPECT_EQ(w.rotation(), 4);
  std::set<double> values;
  for (int c = 0; c < 4; ++c)
    values.insert(w.value(c));
  EXPECT_EQ(values.size(), 4u);
  EXPECT_THROW(w.set_rotation(0), Error);
}

TEST(CpuWorkload, EveryCheckDrawsFreshInputs) {
  FakeWorkload w;
  const size_t before = w.fill_seeds.size();
  ASSERT_TRUE(w.check(kFake, Numerics::tolerance).pass());
  const double first = w.value(0);
  ASSERT_TRUE(w.check(kFake, Numerics::tolerance).pass());
  ASSERT_EQ(w.fill_seeds.size(), before + 2);
  EXPECT_NE(w.fill_seeds[before], w.fill_seeds[before + 1]);
  EXPECT_NE(w.value(0), first);
}

// A kernel that writes nothing must fail even when an earlier run left exactly the right
// values in the output (same inputs again).
TEST(CpuWorkload, OutputIsPoisonedBeforeEachCheck) {
  FakeWorkload w;
  w.fixed_inputs = true;
  ASSERT_TRUE(w.check(kFake, Numerics::tolerance).pass());
  w.write_outputs = false;
  EXPECT_FALSE(w.check(kFake, Numerics::tolerance).pass());
  EXPECT_FALSE(w.check(kFake, Numerics::batch_invariant).pass());
}

TEST(CpuWorkload, ToleranceBoundIsTheF32DotBound) {
  const double bound = f32_dot_bound(FakeWorkload::kK);
  FakeWorkload w;
  w.relative_error = 0.5 * bound;
  const CheckResult inside = w.check(kFake, Numerics::tolerance);
  EXPECT_TRUE(inside.pass()) << inside.reason;
  EXPECT_DOUBLE_EQ(inside.bound, bound);
  w.relative_error = 4 * bound;
  const CheckResult outside = w.check(kFake, Numerics::tolerance);
  EXPECT_EQ(outside.status, Status::gate_failed);
}

TEST(CpuWorkload, ForeignTacticCannotRun) {
  FakeWorkload w;
  std::string why;
  EXPECT_EQ(w.can_run(Tactic{"other", {}}, &why), Status::cannot_implement);
  EXPECT_NE(why.find("other"), std::string::npos);
  EXPECT_EQ(w.check(Tactic{"other", {}}, Numerics::tolerance).status, Status::cannot_implement);
}

} // namespace
} // namespace hone::cpu

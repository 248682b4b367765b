#include "cpu/gemv_f32_op.h"

#include <algorithm>
#include <vector>

#include "cpu/check_util.h"
#include "cpu/gemv_f32.h"
#include "cpu/thread_pool.h"
#include "hone/error.h"

namespace hone::cpu {

namespace {

// [multiply-adds] below this the default stays on one thread: waking the pool costs more.
constexpr int64_t kParallelWork = int64_t{1} << 18;
constexpr uint64_t kSeed = 0x67656d76'00000000ull;

struct Dims {
  int64_t rows, n, k;
};

Dims dims_of(const Shape &s) { return {s[0], s[1], s[2]}; }

// The default: 8 partial sums (the summation order every bucket shares, so a default row
// never depends on how many rows were batched with it); 2 x 4 blocks once rows allow, one
// row x 8 outputs for single rows.
GemvConfig default_config(const Dims &d) {
  GemvConfig c;
  c.k_unroll = 8;
  c.rows_per_block = d.rows >= 2 ? 2 : 1;
  c.cols_per_block = d.rows >= 2 ? 4 : 8;
  c.threads = d.rows * d.n * d.k >= kParallelWork ? ThreadPool::global().size() : 1;
  return c;
}

void reference(const float *x, const float *w, std::vector<double> &out, const Dims &d) {
  out.assign(static_cast<size_t>(d.rows * d.n), 0.0);
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c = 0; c < d.n; ++c) {
      double s = 0;
      for (int64_t j = 0; j < d.k; ++j)
        s += static_cast<double>(x[r * d.k + j]) * static_cast<double>(w[c * d.k + j]);
      out[static_cast<size_t>(r * d.n + c)] = s;
    }
}

class GemvWorkload final : public Workload {
public:
  explicit GemvWorkload(const Dims &d) : d_(d), y_(static_cast<size_t>(d.rows * d.n)) {
    set_rotation(1);
  }

  size_t bytes_per_launch() const override {
    return static_cast<size_t>(d_.n * d_.k + d_.rows * d_.k + d_.rows * d_.n) * sizeof(float);
  }

  void set_rotation(int copies) override {
    if (copies < 1)
      HONE_INVALID_ARGUMENT("rotation copies=" + std::to_string(copies) + " is below 1");
    const size_t want = static_cast<size_t>(copies);
    while (copies_.size() < want) {
      const uint64_t seed = kSeed + 2 * copies_.size();
      Copy c{std::vector<float>(static_cast<size_t>(d_.n * d_.k)),
             std::vector<float>(static_cast<size_t>(d_.rows * d_.k))};
      fill_uniform(c.w, seed);
      fill_uniform(c.x, seed + 1);
      copies_.push_back(std::move(c));
    }
    copies_.resize(want);
  }

  int rotation() const override { return static_cast<int>(copies_.size()); }

  Status can_run(const Tactic &tactic, std::string *reason) const override {
    if (auto why = GemvConfig::invalid_reason(tactic)) {
      if (reason)
        *reason = *why;
      return Status::cannot_implement;
    }
    return Status::ok;
  }

  void run(const Tactic &tactic, int copy) override {
    const Copy &c = copies_.at(static_cast<size_t>(copy));
    gemv_f32_kernel(GemvConfig::from(tactic), c.x.data(), c.w.data(), y_.data(), d_.rows, d_.n,
                    d_.k);
  }

  CheckResult check(const Tactic &tactic, Numerics numerics) override {
    CheckResult result;
    if (Status s = can_run(tactic, &result.reason); s != Status::ok) {
      result.status = s;
      return result;
    }
    Copy &c = copies_[0];
    const uint64_t seed = kSeed ^ (0x9e3779b97f4a7c15ull * ++checks_);
    fill_uniform(c.w, seed);
    fill_uniform(c.x, seed + 1);
    poison(y_);
    run(tactic, 0);

    if (numerics == Numerics::tolerance) {
      reference(c.x.data(), c.w.data(), ref_, d_);
      return compare_tolerance(y_, ref_, f32_dot_bound(d_.k));
    }
    // Batch invariant: each row must equal, bit for bit, the default tactic's result for
    // that row alone.
    const GemvConfig single = default_config({1, d_.n, d_.k});
    std::vector<float> row(static_cast<size_t>(d_.n));
    int64_t mismatches = 0;
    for (int64_t r = 0; r < d_.rows; ++r) {
      gemv_f32_kernel(single, c.x.data() + r * d_.k, c.w.data(), row.data(), 1, d_.n, d_.k);
      mismatches += count_bit_mismatches(
          std::span<const float>(y_).subspan(static_cast<size_t>(r * d_.n), row.size()), row);
    }
    result.error = static_cast<double>(mismatches);
    result.bound = 0;
    if (mismatches > 0) {
      result.status = Status::gate_failed;
      result.reason = std::to_string(mismatches) + " of " + std::to_string(y_.size()) +
                      " elements differ from single-row results of the default tactic " +
                      single.tactic().str();
    }
    return result;
  }

private:
  struct Copy {
    std::vector<float> w; // [n, k]
    std::vector<float> x; // [rows, k]
  };
  Dims d_;
  std::vector<Copy> copies_;
  std::vector<float> y_;    // [rows, n], shared by every copy
  std::vector<double> ref_; // float64 reference, reused between checks
  uint64_t checks_ = 0;
};

} // namespace

GemvF32Op::GemvF32Op()
    : buckets_{{DimSpec::exact_then_pow2("rows", 1, 32, 8), DimSpec::exact("n", 1, 1 << 24),
                DimSpec::exact("k", 1, 1 << 24)}} {}

void GemvF32Op::validate(const Shape &shape) const {
  if (shape.rank != 3)
    HONE_INVALID_ARGUMENT("gemv.f32: shape has rank " + std::to_string(shape.rank) +
                          ", expected 3 (rows, n, k)");
  if (shape.dtype != DType::f32)
    HONE_INVALID_ARGUMENT("gemv.f32: dtype " + std::string(to_string(shape.dtype)) + " is not f32");
  const char *names[] = {"rows", "n", "k"};
  for (int i = 0; i < 3; ++i)
    if (shape[i] < 1)
      HONE_INVALID_ARGUMENT(std::string("gemv.f32: ") + names[i] + "=" + std::to_string(shape[i]) +
                            " is below 1");
}

Tactic GemvF32Op::default_tactic(const Shape &bucket) const {
  return default_config(dims_of(bucket)).tactic();
}

std::vector<Tactic> GemvF32Op::candidates(const Shape &bucket) const {
  const Dims d = dims_of(bucket);
  const int hw = ThreadPool::global().size();
  struct Entry {
    int rb, cb, k_unroll;
  };
  // Register blockings that vectorise well at each k_unroll; rows_per_block above the
  // bucket's rows would only run its leftover path, so those are dropped.
  const Entry entries[] = {{1, 4, 8},  {1, 8, 8},  {2, 4, 8},  {4, 2, 8}, {4, 4, 8}, {8, 1, 8},
                           {1, 4, 16}, {1, 8, 16}, {4, 4, 16}, {1, 8, 4}, {4, 4, 4}};
  std::vector<Tactic> out;
  const auto add = [&](GemvConfig c) {
    Tactic t = c.tactic();
    if (std::find(out.begin(), out.end(), t) == out.end())
      out.push_back(std::move(t));
  };
  const GemvConfig def = default_config(d);
  add(def);
  for (const Entry &e : entries)
    if (e.rb <= d.rows)
      add({e.rb, e.cb, e.k_unroll, hw});
  // Single-threaded variants: small problems where waking the pool costs more than it saves.
  if (hw > 1) {
    add({def.rows_per_block, def.cols_per_block, def.k_unroll, 1});
    add({1, 4, 16, 1});
  }
  return out;
}

std::unique_ptr<Workload> GemvF32Op::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<GemvWorkload>(dims_of(shape));
}

} // namespace hone::cpu

#include "cpu/gemv_f32_op.h"

#include <algorithm>
#include <vector>

#include "cpu/check_util.h"
#include "cpu/cpu_workload.h"
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

// One rotation copy's inputs.
struct GemvCopy {
  std::vector<float> w; // [n, k]
  std::vector<float> x; // [rows, k]
};

class GemvWorkload final : public CpuWorkloadOf<GemvCopy> {
public:
  explicit GemvWorkload(const Dims &d) : CpuWorkloadOf(d.rows, d.n, d.k, kSeed), d_(d) {
    set_rotation(1);
  }

  size_t bytes_per_launch() const override {
    return static_cast<size_t>(d_.n * d_.k + d_.rows * d_.k + d_.rows * d_.n) * sizeof(float);
  }

private:
  std::optional<std::string> invalid_reason(const Tactic &tactic) const override {
    return GemvConfig::invalid_reason(tactic);
  }

  GemvCopy make_copy() const override {
    return {std::vector<float>(static_cast<size_t>(d_.n * d_.k)),
            std::vector<float>(static_cast<size_t>(d_.rows * d_.k))};
  }

  void fill_copy(size_t copy, uint64_t seed) override {
    GemvCopy &c = copies_[copy];
    fill_uniform(c.w, seed);
    fill_uniform(c.x, seed + 1);
  }

  void run_rows(const Tactic &tactic, int copy, int64_t r0, int64_t rows, float *y) override {
    const GemvCopy &c = copies_.at(static_cast<size_t>(copy));
    gemv_f32_kernel(GemvConfig::from(tactic), c.x.data() + r0 * d_.k, c.w.data(), y, rows, d_.n,
                    d_.k);
  }

  void reference(std::vector<double> &out) const override {
    reference_f64(copies_[0].x.data(), copies_[0].w.data(), d_.rows, d_.n, d_.k, out);
  }

  Tactic single_row_default() const override { return default_config({1, d_.n, d_.k}).tactic(); }

  Dims d_;
};

} // namespace

GemvF32Op::GemvF32Op()
    : buckets_{{DimSpec::exact_then_pow2_up("rows", 1, 32, 8), DimSpec::exact("n", 1, 1 << 24),
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

std::optional<WorkloadBytes> GemvF32Op::workload_bytes(const Shape &shape) const {
  const Dims d = dims_of(shape);
  WorkloadBytes b;
  b.per_copy = static_cast<size_t>(d.n * d.k + d.rows * d.k) * sizeof(float);
  b.fixed = CpuWorkload::output_bytes(d.rows, d.n);
  return b;
}

std::unique_ptr<Workload> GemvF32Op::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<GemvWorkload>(dims_of(shape));
}

} // namespace hone::cpu

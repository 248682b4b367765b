#include "cpu/qmv_affine_op.h"

#include <algorithm>
#include <vector>

#include "cpu/bf16.h"
#include "cpu/check_util.h"
#include "cpu/cpu_workload.h"
#include "cpu/qmv_affine.h"
#include "cpu/thread_pool.h"
#include "hone/error.h"
#include "hone/ops/cpu.h"

namespace hone::cpu {

namespace {

using ops::cpu::AffineQuantized;

// [multiply-adds] below this the default stays on one thread: waking the pool costs more.
constexpr int64_t kParallelWork = int64_t{1} << 18;
constexpr uint64_t kSeed = 0x716d7661'00000000ull;

struct Dims {
  int64_t rows, n, k;
  int bits, group;
};

Dims dims_of(const Shape &s) {
  return {s[0], s[1], s[2], static_cast<int>(s[3]), static_cast<int>(s[4])};
}

// The default: dequantise on the fly (nothing to share for a single row) and block as many
// rows as the bucket has, up to 8, so each dequantised weight serves them all; outputs per
// block shrink as rows grow to keep the partial sums in registers. All tactics share one
// summation order, so the default of every bucket gives the same bits per row.
QmvConfig default_config(const Dims &d) {
  QmvConfig c;
  c.rows_per_block = d.rows >= 8 ? 8 : d.rows >= 4 ? 4 : d.rows >= 2 ? 2 : 1;
  c.cols_per_block = d.rows >= 8 ? 1 : d.rows >= 4 ? 2 : 4;
  c.group_buffer = 0;
  c.threads = d.rows * d.n * d.k >= kParallelWork ? ThreadPool::global().size() : 1;
  return c;
}

// Random quantized weights shaped like real ones: scales in [0.002, 0.02), biases near
// -scale * q_max / 2 so that weights straddle zero.
void fill_quantized(AffineQuantized &q, const Dims &d, uint64_t seed) {
  Random rng(seed);
  for (uint32_t &word : q.packed)
    word = static_cast<uint32_t>(rng.next() >> 32);
  const float half_range = static_cast<float>((1 << d.bits) - 1) / 2.0f;
  for (size_t i = 0; i < q.scales.size(); ++i) {
    const float scale = rng.uniform(0.002f, 0.02f);
    q.scales[i] = float_to_bf16(scale);
    q.biases[i] = float_to_bf16(-scale * half_range * rng.uniform(0.8f, 1.2f));
  }
}

// One rotation copy's inputs.
struct QmvCopy {
  AffineQuantized q;
  std::vector<float> x; // [rows, k]
};

// [bytes] packed words, scales and biases of W [n, k].
size_t quantized_bytes(const Dims &d) {
  const size_t packed = static_cast<size_t>(d.n * d.k * d.bits / 8);
  const size_t params = static_cast<size_t>(2 * d.n * (d.k / d.group)) * sizeof(uint16_t);
  return packed + params;
}

class QmvWorkload final : public CpuWorkloadOf<QmvCopy> {
public:
  explicit QmvWorkload(const Dims &d) : CpuWorkloadOf(d.rows, d.n, d.k, kSeed), d_(d) {
    set_rotation(1);
  }

  size_t bytes_per_launch() const override {
    return quantized_bytes(d_) + static_cast<size_t>(d_.rows * d_.k + d_.rows * d_.n) * 4;
  }

private:
  std::optional<std::string> invalid_reason(const Tactic &tactic) const override {
    return QmvConfig::invalid_reason(tactic);
  }

  QmvCopy make_copy() const override {
    QmvCopy c;
    c.q.packed.resize(static_cast<size_t>(d_.n * d_.k * d_.bits / 32));
    c.q.scales.resize(static_cast<size_t>(d_.n * (d_.k / d_.group)));
    c.q.biases.resize(c.q.scales.size());
    c.x.resize(static_cast<size_t>(d_.rows * d_.k));
    return c;
  }

  void fill_copy(size_t copy, uint64_t seed) override {
    QmvCopy &c = copies_[copy];
    fill_quantized(c.q, d_, seed);
    fill_uniform(c.x, seed + 1);
  }

  void run_rows(const Tactic &tactic, int copy, int64_t r0, int64_t rows, float *y) override {
    const QmvCopy &c = copies_.at(static_cast<size_t>(copy));
    qmv_affine_kernel(QmvConfig::from(tactic),
                      {c.x.data() + r0 * d_.k, c.q.packed.data(), c.q.scales.data(),
                       c.q.biases.data(), y, rows, d_.n, d_.k, d_.bits, d_.group});
  }

  // On the dequantised weights, so only the kernel's arithmetic is judged.
  void reference(std::vector<double> &out) const override {
    const QmvCopy &c = copies_[0];
    const std::vector<float> w = ops::cpu::dequantize_affine(c.q, d_.n, d_.k, d_.bits, d_.group);
    reference_f64(c.x.data(), w.data(), d_.rows, d_.n, d_.k, out);
  }

  Tactic single_row_default() const override {
    return default_config({1, d_.n, d_.k, d_.bits, d_.group}).tactic();
  }

  Dims d_;
};

} // namespace

QmvAffineOp::QmvAffineOp()
    : buckets_{{DimSpec::exact_then_pow2_up("rows", 1, 32, 8), DimSpec::exact("n", 1, 1 << 24),
                DimSpec::exact("k", 1, 1 << 24), DimSpec::one_of("bits", {4, 8}),
                DimSpec::one_of("group", {32, 64, 128})}} {}

void QmvAffineOp::validate(const Shape &shape) const {
  if (shape.rank != 5)
    HONE_INVALID_ARGUMENT("qmv.affine: shape has rank " + std::to_string(shape.rank) +
                          ", expected 5 (rows, n, k, bits, group)");
  if (shape.dtype != DType::f32)
    HONE_INVALID_ARGUMENT("qmv.affine: activation dtype " + std::string(to_string(shape.dtype)) +
                          " is not f32");
  const char *names[] = {"rows", "n", "k"};
  for (int i = 0; i < 3; ++i)
    if (shape[i] < 1)
      HONE_INVALID_ARGUMENT(std::string("qmv.affine: ") + names[i] + "=" +
                            std::to_string(shape[i]) + " is below 1");
  if (auto why = qmv_problem_error(shape[2], shape[3], shape[4]))
    HONE_INVALID_ARGUMENT("qmv.affine: " + *why);
}

Tactic QmvAffineOp::default_tactic(const Shape &bucket) const {
  return default_config(dims_of(bucket)).tactic();
}

std::vector<Tactic> QmvAffineOp::candidates(const Shape &bucket) const {
  const Dims d = dims_of(bucket);
  const int hw = ThreadPool::global().size();
  struct Entry {
    int rb, cb;
  };
  // rows_per_block above the bucket's rows would only run the leftover path: dropped.
  const Entry entries[] = {{1, 2}, {1, 4}, {2, 4}, {4, 2}, {4, 4}, {8, 1}};
  std::vector<Tactic> out;
  const auto add = [&](QmvConfig c) {
    Tactic t = c.tactic();
    if (std::find(out.begin(), out.end(), t) == out.end())
      out.push_back(std::move(t));
  };
  const QmvConfig def = default_config(d);
  add(def);
  for (int buffer : {0, 1})
    for (const Entry &e : entries)
      if (e.rb <= d.rows)
        add({e.rb, e.cb, buffer, hw});
  // Single-threaded variants: small problems where waking the pool costs more than it saves.
  if (hw > 1) {
    add({def.rows_per_block, def.cols_per_block, 0, 1});
    add({def.rows_per_block, def.cols_per_block, 1, 1});
  }
  return out;
}

std::optional<WorkloadBytes> QmvAffineOp::workload_bytes(const Shape &shape) const {
  const Dims d = dims_of(shape);
  WorkloadBytes b;
  b.per_copy = quantized_bytes(d) + static_cast<size_t>(d.rows * d.k) * sizeof(float);
  b.fixed = CpuWorkload::output_bytes(d.rows, d.n) + static_cast<size_t>(d.n * d.k) * sizeof(float);
  return b;
}

std::unique_ptr<Workload> QmvAffineOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<QmvWorkload>(dims_of(shape));
}

} // namespace hone::cpu

// The Workload of a CPU op whose output is f32 [rows, n] with dot products of length k
// (gemv.f32, qmv.affine): rotation copies seeded in a fixed sequence, can_run() from the
// op's tactic validator, and the gate (fresh random inputs, poisoned output, one run, then
// the float64 reference within f32_dot_bound(k), or bitwise against the rows=1 default).
// An op supplies only what is its own: its inputs, its launch, its reference.
//
//   class GemvWorkload final : public CpuWorkloadOf<GemvCopy> { ... };   // the hooks below
//   auto w = std::make_unique<GemvWorkload>(dims);                        // set_rotation(1)
//   w->check(tactic, Numerics::tolerance);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hone/op.h"

namespace hone::cpu {

class CpuWorkload : public Workload {
public:
  // Copy i holds the inputs filled from seed + 2 * i, whenever it was added.
  void set_rotation(int copies) final;
  int rotation() const final { return static_cast<int>(rotation_); }
  Status can_run(const Tactic &tactic, std::string *reason) const final;
  void run(const Tactic &tactic, int copy) final;
  CheckResult check(const Tactic &tactic, Numerics numerics) final;

  // [bytes] what this base allocates for a [rows, n] output: the f32 output and its float64
  // reference (TunableOp::workload_bytes of a CPU op adds its inputs to it).
  static size_t output_bytes(int64_t rows, int64_t n) {
    return static_cast<size_t>(rows) * static_cast<size_t>(n) * (sizeof(float) + sizeof(double));
  }

protected:
  // The output is [rows, n] f32, shared by every copy; k is the dot length the tolerance
  // bound is set by; seed is the first rotation seed (one per op, so ops never share inputs).
  // The derived constructor calls set_rotation(1) once its own members exist.
  CpuWorkload(int64_t rows, int64_t n, int64_t k, uint64_t seed);

  // Why `tactic` is not one of the op's tactics, or nullopt.
  virtual std::optional<std::string> invalid_reason(const Tactic &tactic) const = 0;
  // Keeps the first `count` copies and appends allocated (unfilled) ones up to `count`.
  virtual void resize_copies(size_t count) = 0;
  // Fills every input of copy `copy` from `seed`: the same seed gives the same inputs.
  virtual void fill_copy(size_t copy, uint64_t seed) = 0;
  // Rows [r0, r0 + rows) of copy `copy` under `tactic` into y ([rows, n]).
  // REQUIRES: can_run(tactic) is ok.
  virtual void run_rows(const Tactic &tactic, int copy, int64_t r0, int64_t rows, float *y) = 0;
  // The float64 reference of copy 0 into `out` ([rows, n]).
  virtual void reference(std::vector<double> &out) const = 0;
  // The default tactic of the rows=1 bucket: batch_invariant mode holds every row to it.
  virtual Tactic single_row_default() const = 0;

private:
  CheckResult check_batch_invariant();

  int64_t rows_, n_, k_;
  uint64_t seed_;
  size_t rotation_ = 0;
  std::vector<float> y_;    // [rows, n], shared by every copy
  std::vector<double> ref_; // float64 reference, reused between checks
  uint64_t checks_ = 0;
};

// The thin typed layer: owns the rotation copies of an op's `Copy` (its input set).
template <class Copy> class CpuWorkloadOf : public CpuWorkload {
protected:
  using CpuWorkload::CpuWorkload;

  // An allocated copy, its inputs not yet filled.
  virtual Copy make_copy() const = 0;

  void resize_copies(size_t count) final {
    if (copies_.size() > count)
      copies_.resize(count);
    while (copies_.size() < count)
      copies_.push_back(make_copy());
  }

  std::vector<Copy> copies_;
};

// out[r, c] = sum_j x[r, j] * w[c, j] in float64, in increasing j; x [rows, k], w [n, k].
void reference_f64(const float *x, const float *w, int64_t rows, int64_t n, int64_t k,
                   std::vector<double> &out);

} // namespace hone::cpu

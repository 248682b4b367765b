#include "cpu/cpu_workload.h"

#include <span>

#include "cpu/check_util.h"
#include "hone/error.h"

namespace hone::cpu {

CpuWorkload::CpuWorkload(int64_t rows, int64_t n, int64_t k, uint64_t seed)
    : rows_(rows), n_(n), k_(k), seed_(seed), y_(static_cast<size_t>(rows * n)) {}

void CpuWorkload::set_rotation(int copies) {
  if (copies < 1)
    HONE_INVALID_ARGUMENT("rotation copies=" + std::to_string(copies) + " is below 1");
  const size_t want = static_cast<size_t>(copies);
  resize_copies(want);
  for (size_t i = rotation_; i < want; ++i)
    fill_copy(i, seed_ + 2 * i);
  rotation_ = want;
}

Status CpuWorkload::can_run(const Tactic &tactic, std::string *reason) const {
  if (auto why = invalid_reason(tactic)) {
    if (reason)
      *reason = *why;
    return Status::cannot_implement;
  }
  return Status::ok;
}

void CpuWorkload::run(const Tactic &tactic, int copy) {
  run_rows(tactic, copy, 0, rows_, y_.data());
}

CheckResult CpuWorkload::check(const Tactic &tactic, Numerics numerics) {
  CheckResult result;
  if (Status s = can_run(tactic, &result.reason); s != Status::ok) {
    result.status = s;
    return result;
  }
  fill_copy(0, seed_ ^ (0x9e3779b97f4a7c15ull * ++checks_));
  poison(y_);
  run(tactic, 0);

  if (numerics == Numerics::tolerance) {
    reference(ref_);
    return compare_tolerance(y_, ref_, f32_dot_bound(k_));
  }
  return check_batch_invariant();
}

// Batch invariant: each row must equal, bit for bit, the default tactic's result for that
// row alone.
CheckResult CpuWorkload::check_batch_invariant() {
  CheckResult result;
  const Tactic single = single_row_default();
  std::vector<float> row(static_cast<size_t>(n_));
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows_; ++r) {
    run_rows(single, 0, r, 1, row.data());
    mismatches += count_bit_mismatches(
        std::span<const float>(y_).subspan(static_cast<size_t>(r * n_), row.size()), row);
  }
  result.error = static_cast<double>(mismatches);
  result.bound = 0;
  if (mismatches > 0) {
    result.status = Status::gate_failed;
    result.reason = std::to_string(mismatches) + " of " + std::to_string(y_.size()) +
                    " elements differ from single-row results of the default tactic " +
                    single.str();
  }
  return result;
}

void reference_f64(const float *x, const float *w, int64_t rows, int64_t n, int64_t k,
                   std::vector<double> &out) {
  out.assign(static_cast<size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j)
        s += static_cast<double>(x[r * k + j]) * static_cast<double>(w[c * k + j]);
      out[static_cast<size_t>(r * n + c)] = s;
    }
}

} // namespace hone::cpu

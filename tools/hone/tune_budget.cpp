#include "hone/tune_budget.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "hone/error.h"

namespace hone::cli {

namespace {

// [bytes] the gate of a bucket touches: what the op allocates for one input copy, or for decode
// attention, which does not say, its K and V (2 x total_len x hkv x head_dim bf16 values, which
// its host reference reads); 0 when neither is known.
double gate_bytes(const TunableOp &op, const Shape &bucket) {
  if (const std::optional<WorkloadBytes> bytes = op.workload_bytes(bucket))
    return static_cast<double>(bytes->total(1));
  const BucketSpec &spec = op.buckets();
  const int total = spec.index_of("total_len"), hkv = spec.index_of("hkv"),
            head_dim = spec.index_of("head_dim");
  if (total < 0 || hkv < 0 || head_dim < 0)
    return 0;
  return 2.0 * 2.0 * static_cast<double>(bucket[total]) * static_cast<double>(bucket[hkv]) *
         static_cast<double>(bucket[head_dim]);
}

} // namespace

BudgetItem bucket_item(const TunableOp &op, const Shape &bucket, int candidates) {
  BudgetItem item;
  item.op = std::string(op.name());
  item.candidates = candidates;
  item.candidate_bytes_s = gate_bytes(op, bucket) * kPriorGateSecondsPerByte;
  item.candidate_s = kPriorCandidateSeconds + item.candidate_bytes_s;
  item.fixed_s = kPriorBucketSeconds;
  return item;
}

TuneBudget::TuneBudget(std::vector<BudgetItem> items, double budget_s)
    : items_(std::move(items)), budget_s_(budget_s), caps_(items_.size()),
      done_(items_.size(), false) {
  for (size_t i = 0; i < items_.size(); ++i)
    caps_[i] = items_[i].candidates;
  plan(0);
}

void TuneBudget::Sums::add(double measured, double rest, double bytes) {
  m += measured;
  p += rest + bytes;
  rr += rest * rest;
  rb += rest * bytes;
  bb += bytes * bytes;
  mr += measured * rest;
  mb += measured * bytes;
  ++n;
}

double TuneBudget::Sums::one() const { return p > 0 ? m / p : 1.0; }

TuneBudget::Scales TuneBudget::Sums::fit() const {
  const double one = this->one();
  // Least squares of measured = rest x s.rest + bytes x s.bytes. Where the steps differ too
  // little in their share of bytes (a near-singular system), one scale.
  const double det = rr * bb - rb * rb;
  if (n < 2 || !(det > 1e-6 * rr * bb))
    return Scales{one, one};
  double fr = (mr * bb - mb * rb) / det, fb = (mb * rr - mr * rb) / det;
  if (fr < 0) { // the best fit with the rest's scale at 0
    fr = 0;
    fb = mb / bb;
  } else if (fb < 0) {
    fb = 0;
    fr = mr / rr;
  }
  return Scales{fr, fb};
}

TuneBudget::Scales TuneBudget::scales(const std::string &op) const {
  const auto it = std::find(scale_ops_.begin(), scale_ops_.end(), op);
  if (it != scale_ops_.end())
    return fitted_[static_cast<size_t>(it - scale_ops_.begin())];
  // An op not measured yet: what every op measured so far, as one scale.
  return Scales{all_.one(), all_.one()};
}

TuneBudget::Parts TuneBudget::candidate_parts(size_t i) const {
  const BudgetItem &it = items_[i];
  return {it.candidate_s - it.candidate_bytes_s, it.candidate_bytes_s};
}

TuneBudget::Parts TuneBudget::parts(size_t i, int k) const {
  const Parts one = candidate_parts(i);
  const double kk = std::min(k, items_[i].candidates);
  return {items_[i].fixed_s + kk * one.rest, kk * one.bytes};
}

double TuneBudget::scaled(size_t i, Parts u) const {
  const Scales s = scales(items_[i].op);
  return s.rest * u.rest + s.bytes * u.bytes;
}

double TuneBudget::cost(size_t i, int k) const { return scaled(i, parts(i, k)); }

double TuneBudget::per_candidate(size_t i) const { return scaled(i, candidate_parts(i)); }

int TuneBudget::cap_at(size_t i, double tau) const {
  const BudgetItem &it = items_[i];
  if (it.candidates <= kMinCandidates)
    return it.candidates;
  const double per = per_candidate(i);
  const double fit = per > 0 ? std::floor(tau / per) : it.candidates;
  return static_cast<int>(std::clamp<double>(fit, kMinCandidates, it.candidates));
}

void TuneBudget::plan(double elapsed_s) {
  allowance_.reset();
  over_ = false;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!done_[i])
      caps_[i] = items_[i].candidates;
  if (budget_s_ <= 0)
    return;
  const double left = budget_s_ - elapsed_s;
  const auto total_at = [&](double tau) {
    double sum = 0;
    for (size_t i = 0; i < items_.size(); ++i)
      if (!done_[i])
        sum += cost(i, cap_at(i, tau));
    return sum;
  };
  if (predicted_full() <= left)
    return;
  // The largest tau that fits: total_at() grows with tau, from every bucket at kMinCandidates
  // (tau = 0) to every candidate (tau = hi).
  double hi = 0;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!done_[i])
      hi = std::max(hi, per_candidate(i) * items_[i].candidates);
  double lo = 0;
  over_ = total_at(0) > left;
  if (!over_)
    for (int iteration = 0; iteration < 60; ++iteration) {
      const double mid = 0.5 * (lo + hi);
      (total_at(mid) <= left ? lo : hi) = mid;
    }
  allowance_ = lo;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!done_[i])
      caps_[i] = cap_at(i, lo);
}

void TuneBudget::record(size_t i, double seconds) {
  const BudgetItem &it = items_[i];
  const Parts u = parts(i, caps_[i]);
  auto where = std::find(scale_ops_.begin(), scale_ops_.end(), it.op);
  if (where == scale_ops_.end()) {
    scale_ops_.push_back(it.op);
    sums_.emplace_back();
    fitted_.emplace_back();
    where = scale_ops_.end() - 1;
  }
  const size_t j = static_cast<size_t>(where - scale_ops_.begin());
  sums_[j].add(seconds, u.rest, u.bytes);
  fitted_[j] = sums_[j].fit();
  all_.add(seconds, u.rest, u.bytes);
  done_[i] = true;
}

double TuneBudget::predicted_full() const {
  double sum = 0;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!done_[i])
      sum += cost(i, items_[i].candidates);
  return sum;
}

double TuneBudget::predicted() const {
  double sum = 0;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!done_[i])
      sum += cost(i, caps_[i]);
  return sum;
}

size_t TuneBudget::capped_count() const {
  size_t n = 0;
  for (size_t i = 0; i < items_.size(); ++i)
    n += !done_[i] && capped(i);
  return n;
}

long TuneBudget::candidates_full() const {
  long n = 0;
  for (size_t i = 0; i < items_.size(); ++i)
    n += done_[i] ? 0 : items_[i].candidates;
  return n;
}

long TuneBudget::candidates_capped() const {
  long n = 0;
  for (size_t i = 0; i < items_.size(); ++i)
    n += done_[i] ? 0 : caps_[i];
  return n;
}

double parse_duration(std::string_view text, std::string_view option) {
  const auto bad = [&] {
    HONE_INVALID_ARGUMENT(std::string(option) + ": '" + std::string(text) +
                          "' is not a duration like 9m, 90s, 1m30s, 1h or 600 (seconds)");
  };
  if (text.empty())
    bad();
  double total = 0;
  std::string_view rest = text;
  int last_unit = 4; // units must descend: h, m, s
  while (!rest.empty()) {
    long value = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || end == rest.data() || value < 0)
      bad();
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (rest.empty()) {
      if (last_unit != 4) // "1m30": a bare number only alone
        bad();
      return static_cast<double>(value);
    }
    const int unit = rest[0] == 'h' ? 3 : rest[0] == 'm' ? 2 : rest[0] == 's' ? 1 : 0;
    if (unit == 0 || unit >= last_unit)
      bad();
    last_unit = unit;
    total += static_cast<double>(value) * (unit == 3 ? 3600 : unit == 2 ? 60 : 1);
    rest.remove_prefix(1);
  }
  return total;
}

} // namespace hone::cli

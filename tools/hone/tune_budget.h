// TuneBudget: fits a model tune into a time budget by capping how many candidates each bucket
// gates and times (CappedOp). Each step of the run (a bucket, or a chain cell of fixed cost)
// is predicted as fixed_s + k x candidate_s for k candidates, where candidate_s holds a part
// that grows with the bytes the gate touches (candidate_bytes_s). The predictions of an op are
// corrected by what its steps measured so far: once two of its buckets of different sizes are
// measured, the byte-proportional part and the rest are scaled apart (a least-squares fit of
// the two scales, neither negative), since the gate's cost per byte is what varies most across
// hosts and ops (a 263 MB int4 lm_head took past 80 s where one scale fitted to the op's four
// smaller buckets predicted 57); before that by one scale for the whole prediction (all ops'
// until it has its own). Before each step plan() picks an allowance tau, the seconds of
// candidates a bucket may spend, as the largest that lets the steps left fit the time left: a
// bucket then times clamp(floor(tau / candidate_s), kMinCandidates, its count) candidates, so
// cheap buckets keep every candidate and the costly ones are cut first. Without a budget
// nothing is capped.
//
//   TuneBudget budget(items, /*budget_s=*/540);
//   budget.plan(elapsed());                   // before each step
//   run_step(i, budget.cap(i));
//   budget.record(i, seconds_it_took);
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hone/op.h"

namespace hone::cli {

// The fewest candidates a capped bucket times: the default and one challenger.
inline constexpr int kMinCandidates = 2;

// Prior costs on an H200 host (16 cores), before anything is measured. [seconds] per bucket:
// workload preparation (rotation copies), batch calibration and the A/A and confirmation pairs
// (~60 samples). Per candidate: 7 triage samples of >= 100 sync round trips, plus the gate,
// whose fresh inputs, download and float64 host reference grow with the bytes the workload
// touches (a 0.6 GB qmm.affine prefill bucket: ~0.3 s). The per-bucket cost is what the H200
// measured (docs/benchmark_results/2026-12-01-h200-step/run8: 538 Llama-3.1-8B buckets, most
// capped to 2 candidates, in 5m25s, about 0.5 s a bucket beyond its candidates' triage). The
// gate's cost per byte is what the int4 tune of the step's linears measured on an H100 host
// (docs/benchmark_results/2026-12-06-h100/call1, 181 candidates a bucket): 1.1-1.5 ns a byte
// between gate_up (66 MB, 18.4 s), down, qkv and the lm_head (296 MB, 65.8 s). The prior of
// 0.5 ns before it predicted the lm_head's tune at 29 s; on the H200 host it ran past 95 s.
inline constexpr double kPriorBucketSeconds = 0.45;
inline constexpr double kPriorCandidateSeconds = 0.01;
inline constexpr double kPriorGateSecondsPerByte = 1.2e-9;
// Default budget of a model tune: what keeps the Llama-3.1-8B matrix under ten minutes.
inline constexpr std::string_view kDefaultModelBudget = "9m";

// One step of a tune: a bucket (candidates > 0) or a step of fixed cost (a chain cell).
struct BudgetItem {
  std::string op;         // predictions are scaled per op
  int candidates = 0;     // what the bucket gates and times uncapped; 0: fixed cost only
  double candidate_s = 0; // [seconds] predicted per candidate
  double fixed_s = 0;     // [seconds] predicted beyond its candidates
  // [seconds] the part of candidate_s that grows with the gate's bytes (<= candidate_s).
  double candidate_bytes_s = 0;
};
// The prior prediction of a bucket of `op` with `candidates` candidates: the bytes from
// op.workload_bytes(bucket), or for an op with decode attention's dimensions (which does not
// say) its K and V.
BudgetItem bucket_item(const TunableOp &op, const Shape &bucket, int candidates);

class TuneBudget {
public:
  // budget_s <= 0: no budget; every cap is the bucket's count.
  TuneBudget(std::vector<BudgetItem> items, double budget_s);

  // Plans the steps not recorded yet for the time left, budget - elapsed_s.
  void plan(double elapsed_s);
  // Candidates item i may time: its count when uncapped, else at least kMinCandidates.
  int cap(size_t i) const { return caps_[i]; }
  bool capped(size_t i) const { return caps_[i] < items_[i].candidates; }
  // Item i took `seconds` with cap(i) candidates; its op's scale learns from it.
  void record(size_t i, double seconds);

  bool limited() const { return budget_s_ > 0; }
  double budget_s() const { return budget_s_; }
  // [seconds] the steps left predicted (scaled) with every candidate, and at their caps.
  double predicted_full() const;
  double predicted() const;
  // [seconds] of candidates a bucket may spend; nullopt when nothing is capped.
  std::optional<double> allowance() const { return allowance_; }
  // Steps left that are capped, and their candidates uncapped and capped.
  size_t capped_count() const;
  long candidates_full() const;
  long candidates_capped() const;
  // True when even kMinCandidates everywhere is predicted to exceed the time left.
  bool over() const { return over_; }

private:
  // The scales of an op's predictions: of the part that grows with the gate's bytes, and of
  // the rest (equal until two of its buckets of different sizes are measured).
  struct Scales {
    double rest = 1, bytes = 1;
  };
  Scales scales(const std::string &op) const;
  // An unscaled prediction in two parts: what grows with the gate's bytes, and the rest.
  struct Parts {
    double rest = 0, bytes = 0;
  };
  Parts candidate_parts(size_t i) const; // one candidate of item i
  Parts parts(size_t i,
              int k) const; // item i at k candidates (at most its count), fixed cost included
  double scaled(size_t i, Parts u) const; // u under the scales of item i's op
  double cost(size_t i, int k) const; // scaled prediction of item i at k candidates
  double per_candidate(size_t i) const; // scaled prediction of one more candidate of item i
  int cap_at(size_t i, double tau) const;

  // The sums over measured steps that the fit needs: their times (m) and unscaled predictions
  // (p = rest + bytes), and the normal equations of measured = rest x s.rest + bytes x s.bytes.
  struct Sums {
    double m = 0, p = 0, rr = 0, rb = 0, bb = 0, mr = 0, mb = 0;
    int n = 0;
    void add(double measured, double rest, double bytes);
    double one() const; // the one scale: m / p, 1 before any step
    // One scale (m / p) until two steps of different byte shares, then the two-part fit.
    Scales fit() const;
  };

  std::vector<BudgetItem> items_;
  double budget_s_;
  std::vector<int> caps_;
  std::vector<bool> done_;
  std::vector<std::string> scale_ops_; // the ops measured so far
  std::vector<Scales> fitted_;         // their scales, by index into scale_ops_
  std::vector<Sums> sums_;             // what their fits were made of
  Sums all_;                           // every op's steps: one scale for an op not yet measured
  std::optional<double> allowance_;
  bool over_ = false;
};

// [seconds] from "9m", "90s", "1m30s", "1h", "600" (seconds) or "0" (no budget). Throws
// Error(invalid_argument) naming `option` and the text otherwise.
double parse_duration(std::string_view text, std::string_view option);

} // namespace hone::cli

#include "hone/tuner.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hone/error.h"
#include "hone/stats.h"

namespace hone {

Tuner::Tuner(TunerOptions options) : options_(options) {
  if (options_.samples < 5)
    HONE_INVALID_ARGUMENT("tuner samples=" + std::to_string(options_.samples) +
                          " is below the minimum of 5");
  if (options_.top_k < 1)
    HONE_INVALID_ARGUMENT("tuner top_k=" + std::to_string(options_.top_k) + " must be >= 1");
  if (options_.undecided_factor < 1)
    HONE_INVALID_ARGUMENT("tuner undecided_factor=" + std::to_string(options_.undecided_factor) +
                          " must be >= 1");
}

namespace {

struct PairStats {
  double ratio = 1;  // median of t_b / t_a
  double spread = 0; // IQR / median of the ratios
  double a_s = 0;    // median of t_a
  double b_s = 0;    // median of t_b
};

// Times b against a, n ratios. Interleaved: a0 b0 a1 b1 ... b(n-1) an, and ratio i is
// b_i over the mean of the a samples on either side of it, so a linear drift cancels exactly
// and both are timed in an identically sized context. Sequential (for comparison only): all
// of a, then all of b, ratio i = b_i / a_i.
PairStats pair(const SampleFn &sample, size_t a, size_t b, int n, bool interleave) {
  std::vector<double> ta, tb, ratios;
  if (interleave) {
    ta.push_back(sample(a));
    for (int i = 0; i < n; ++i) {
      tb.push_back(sample(b));
      ta.push_back(sample(a));
      const double around = 0.5 * (ta[i] + ta[i + 1]);
      ratios.push_back(around > 0 ? tb[i] / around : 1.0);
    }
  } else {
    for (int i = 0; i < n; ++i)
      ta.push_back(sample(a));
    for (int i = 0; i < n; ++i)
      tb.push_back(sample(b));
    for (int i = 0; i < n; ++i)
      ratios.push_back(ta[i] > 0 ? tb[i] / ta[i] : 1.0);
  }
  PairStats s;
  s.ratio = median(ratios);
  s.spread = relative_spread(ratios);
  s.a_s = median(ta);
  s.b_s = median(tb);
  return s;
}

} // namespace

TuneResult Tuner::select(const std::vector<Tactic> &candidates, size_t default_index,
                         const GateFn &gate, const SampleFn &sample) const {
  HONE_CHECK(default_index < candidates.size(), "default index out of range");
  TuneResult r;
  r.default_index = default_index;
  r.pick_index = default_index;
  r.candidates.resize(candidates.size());

  // 1. Gate: numerics before any timing.
  std::vector<size_t> admitted;
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateReport &c = r.candidates[i];
    c.tactic = candidates[i];
    CheckResult check = gate(i);
    c.status = check.status;
    c.error = check.error;
    c.reason = check.reason;
    if (check.pass())
      admitted.push_back(i);
  }
  if (r.candidates[default_index].status != Status::ok)
    HONE_RUNTIME_ERROR("default tactic " + candidates[default_index].str() +
                       " fails its own gate: " + r.candidates[default_index].reason);

  // 2. Triage: the whole admitted field, round-robin, median of N each.
  const int n = options_.samples;
  std::vector<std::vector<double>> times(candidates.size());
  if (options_.interleave) {
    for (int s = 0; s < n; ++s)
      for (size_t i : admitted)
        times[i].push_back(sample(i));
  } else {
    for (size_t i : admitted)
      for (int s = 0; s < n; ++s)
        times[i].push_back(sample(i));
  }
  for (size_t i : admitted) {
    r.candidates[i].median_s = median(times[i]);
    r.candidates[i].spread = relative_spread(times[i]);
  }
  r.default_s = r.candidates[default_index].median_s;
  r.pick_s = r.default_s;

  std::vector<size_t> field;
  for (size_t i : admitted)
    if (i != default_index)
      field.push_back(i);
  std::sort(field.begin(), field.end(), [&](size_t a, size_t b) {
    return r.candidates[a].median_s < r.candidates[b].median_s;
  });
  if (field.size() > static_cast<size_t>(options_.top_k)) {
    for (size_t j = static_cast<size_t>(options_.top_k); j < field.size(); ++j)
      r.candidates[field[j]].reason = "triage: not in the best " +
                                      std::to_string(options_.top_k);
    field.resize(static_cast<size_t>(options_.top_k));
  }
  if (field.empty()) {
    r.candidates[default_index].reason = "default: only admitted candidate";
    return r;
  }

  // 3. Noise floor: the default paired with itself.
  const PairStats aa = pair(sample, default_index, default_index, n, options_.interleave);
  r.noise_floor = aa.spread;
  r.margin = std::max(options_.min_margin, options_.noise_multiplier * r.noise_floor);

  // A ratio past the minimum margin but inside the noise margin is undecided: the pairing is
  // timed again with undecided_factor x n pairs and judged against the margin of that length
  // (its own A/A, timed once for the tune).
  struct Decision {
    PairStats p;        // the pairing that decides
    double margin;      // and the margin it is judged against
    std::string longer; // "" for the first pairing, else " (N pairs)"
  };
  const int long_n = n * options_.undecided_factor;
  bool long_aa_timed = false;
  // The margin of a longer pairing at `floor`: the spread of a median falls with the square root
  // of its pairs.
  auto long_margin_at = [&](double floor) {
    return std::max(floor, options_.noise_multiplier * r.long_noise_floor /
                               std::sqrt(static_cast<double>(options_.undecided_factor)));
  };
  // `floor`: a first ratio nearer 1 than this is a tie at once, and a longer pairing is judged
  // against no less (min_margin to switch away from the default; half of it to order two
  // finalists that both cleared it, see the runoff).
  auto decide = [&](const PairStats &first, size_t a, size_t b, double floor) {
    const double off = std::abs(first.ratio - 1.0);
    if (options_.undecided_factor == 1 || off < floor || off >= r.margin)
      return Decision{first, r.margin, ""};
    if (!long_aa_timed) {
      long_aa_timed = true;
      const PairStats long_aa =
          pair(sample, default_index, default_index, long_n, options_.interleave);
      r.long_noise_floor = long_aa.spread;
      r.long_margin = long_margin_at(options_.min_margin);
    }
    return Decision{pair(sample, a, b, long_n, options_.interleave), long_margin_at(floor),
                    " (" + std::to_string(long_n) + " pairs)"};
  };

  // 4. Confirmation: each finalist in its own two-way interleave against the default, then the
  // finalists in order of their ratios (ties keep the triage order).
  std::vector<PairStats> confirmed(candidates.size());
  for (size_t i : field) {
    confirmed[i] = pair(sample, default_index, i, n, options_.interleave);
    CandidateReport &c = r.candidates[i];
    c.finalist = true;
    c.ratio = confirmed[i].ratio;
    c.ratio_spread = confirmed[i].spread;
  }
  std::stable_sort(field.begin(), field.end(),
                   [&](size_t a, size_t b) { return confirmed[a].ratio < confirmed[b].ratio; });
  size_t best = confirmed[field[0]].ratio < 1.0 ? field[0] : default_index;

  // 5. Runoff. Two finalists that both clear the margin, with ratios within the margin of each
  // other, were each timed only against the default, so their order is the noise of two
  // pairings. They are paired directly: the runner-up replaces the best only when faster by the
  // margin; inside it the lower candidate index wins, so that a re-run tune gives the same pick
  // for a tie instead of whichever the noise favoured. A first pairing between half min_margin
  // and the margin is undecided and timed again, and the longer pairing is judged against a
  // floor of half min_margin: min_margin guards the switch away from the default, while here
  // both already cleared it, and a runner-up 2.3 % faster lost as a tie in one of two tunes
  // (Qwen2.5-1.5B on an H100, docs/benchmark_results/2026-12-07). "Within" is relative (the
  // runner-up's ratio over the best's), and against the wider of the margin and the noise of the
  // two confirmations themselves (noise_multiplier x their ratio spreads): two finalists of 0.385
  // and 0.36 are 7 % apart, not 0.025, and a confirmation that spread 11 % does not order them.
  const auto runoff_due = [&] {
    if (field.size() < 2 || confirmed[field[1]].ratio >= 1.0 - r.margin ||
        confirmed[field[0]].ratio <= 0)
      return false;
    const double within =
        std::max(r.margin, options_.noise_multiplier *
                               std::max(confirmed[field[0]].spread, confirmed[field[1]].spread));
    return confirmed[field[1]].ratio / confirmed[field[0]].ratio - 1.0 < within;
  };
  if (runoff_due()) {
    const size_t runner = field[1];
    const Decision d = decide(pair(sample, best, runner, n, options_.interleave), best, runner,
                              0.5 * options_.min_margin);
    r.runoff_ratio = d.p.ratio;
    const bool faster = d.p.ratio < 1.0 - d.margin;
    const bool tied = !faster && d.p.ratio <= 1.0 + d.margin;
    const size_t winner = faster || (tied && runner < best) ? runner : best;
    const size_t loser = winner == best ? runner : best;
    r.candidates[loser].reason = tied
                                     ? "runoff: within the margin of candidate " +
                                           std::to_string(winner) + ", which comes first" + d.longer
                                     : "runoff: slower than candidate " + std::to_string(winner) +
                                           ", paired directly" + d.longer;
    best = winner;
  }

  // 6. Switch only past the margin; ties go to the default.
  if (best != default_index) {
    const Decision d = decide(confirmed[best], default_index, best, options_.min_margin);
    if (d.p.ratio < 1.0 - d.margin) {
      r.pick_index = best;
      r.ratio = d.p.ratio;
      r.pick_s = d.p.b_s;
      r.default_s = d.p.a_s;
      r.candidates[best].reason = "picked" + d.longer;
    } else {
      r.candidates[best].reason =
          "within margin " + std::to_string(d.margin) + " of the default" + d.longer;
    }
  }
  for (size_t i : field)
    if (i != r.pick_index && r.candidates[i].reason.empty())
      r.candidates[i].reason = "confirmation: slower than the best finalist";
  return r;
}

} // namespace hone

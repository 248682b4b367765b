#include "hone/chain_tactic.h"

#include <iostream>
#include <mutex>
#include <span>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/registry.h"
#include "hone/step_command.h"
#include "hone/tuner.h"

namespace hone::cli {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

const DecodeStepChainOp &chain_op() {
  static const DecodeStepChainOp *op = [] {
    const auto *registered =
        dynamic_cast<const DecodeStepChainOp *>(Registry::global().find(kChainOpName, "cuda"));
    static const DecodeStepChainOp own;
    return registered ? registered : &own;
  }();
  return *op;
}

int64_t chain_model_id(const model::ModelSpec &m) {
  // NOTE: part of the cache key; changing the fields or their order loses every chain entry.
  uint64_t h = 14695981039346656037ull;
  for (int64_t v : {m.hidden, m.inter, m.hq, m.hkv, m.head_dim, m.layers, m.vocab,
                    int64_t{m.qkv_bias ? 1 : 0}}) {
    h ^= static_cast<uint64_t>(v);
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>((h ^ (h >> 32)) & static_cast<uint64_t>(kChainMaxModelId));
}

Shape chain_bucket(const model::ModelSpec &spec, int64_t batch, int bits, int group,
                   int64_t page_size) {
  const int64_t dims[] = {batch,       bits,        bits == 16 ? 0 : group, page_size,
                          spec.hidden, spec.layers, chain_model_id(spec)};
  const Shape shape(std::span<const int64_t>(dims), DType::bf16);
  const DecodeStepChainOp &op = chain_op();
  op.validate(shape);
  return *op.buckets().map(shape);
}

namespace {

// Why a PDL variant (mismatches over check_replays) cannot be admitted, or empty.
std::string admission_problem(int64_t mismatches, int check_replays) {
  const auto replays = std::to_string(check_replays);
  if (mismatches < 0 || check_replays < kChainCheckReplays)
    return "PDL checked over " + replays + " replays; admission needs " +
           std::to_string(kChainCheckReplays);
  if (mismatches > 0)
    return std::to_string(mismatches) + " words differ from PDL off over " + replays + " replays";
  return {};
}

std::string margin_text() {
  return std::to_string(static_cast<int>(TunerOptions{}.min_margin * 100)) + " % margin";
}

// A PDL candidate of chain_report: its time against PDL off (off_s) and its admission (status
// ok, or gate_failed with the problem returned).
std::string fill_pdl_candidate(CandidateReport &c, const Tactic &tactic, double seconds,
                               double spread, int64_t mismatches, int check_replays, double off_s) {
  c.tactic = tactic;
  c.median_s = seconds;
  c.spread = spread;
  c.finalist = true;
  c.ratio = off_s > 0 ? seconds / off_s : 1;
  c.error = static_cast<double>(std::max<int64_t>(mismatches, 0));
  std::string problem = admission_problem(mismatches, check_replays);
  c.status = problem.empty() ? Status::ok : Status::gate_failed;
  return problem;
}

} // namespace

ChainDecision decide_chain(const ChainTiming &t) {
  ChainDecision d;
  double best_s = t.off_s;
  if (std::string problem = admission_problem(t.mismatches, t.check_replays); !problem.empty())
    d.reason = problem;
  else if (!pdl_chain_wins(t.off_s, t.on_s, t.mismatches))
    d.reason = "PDL not faster than PDL off by the " + margin_text();
  else {
    d.choice.pdl = true;
    d.reason = "picked";
    best_s = t.on_s;
  }
  // A variant where it beats the choice so far by the margin; the fastest such.
  const ChainVariantTiming *best = nullptr;
  for (const ChainVariantTiming &p : t.variants)
    if (admission_problem(p.mismatches, p.check_replays).empty() &&
        pdl_chain_wins(best_s, p.seconds, p.mismatches) && (!best || p.seconds < best->seconds))
      best = &p;
  if (best) {
    d.choice = best->choice;
    d.reason = "picked with " + short_tactic(chain_tactic(d.choice).str(), kChainOpName);
  }
  return d;
}

TuneReport chain_report(const Shape &bucket, const std::string &device_model,
                        const ChainTiming &t) {
  const DecodeStepChainOp &op = chain_op();
  const ChainDecision decision = decide_chain(t);
  TuneReport r;
  r.op = std::string(op.name());
  r.bucket = bucket;
  r.bucket_text = op.buckets().describe(bucket);
  r.key = cache_key(op, bucket, device_model);
  r.numerics = Numerics::batch_invariant;
  r.batch = t.replays_per_sample;
  TuneResult &res = r.result;
  res.candidates.resize(2 + t.variants.size());
  CandidateReport &off = res.candidates[0];
  off.tactic = chain_tactic(false);
  off.median_s = t.off_s;
  off.spread = t.off_spread;
  off.reason = decision.choice.pdl ? "" : "default: " + decision.reason;
  CandidateReport &on = res.candidates[1];
  const std::string on_problem = fill_pdl_candidate(on, chain_tactic(true), t.on_s, t.on_spread,
                                                    t.mismatches, t.check_replays, t.off_s);
  res.default_index = 0;
  res.pick_index = decision.choice.pdl ? 1 : 0;
  for (size_t i = 0; i < t.variants.size(); ++i) {
    const ChainVariantTiming &p = t.variants[i];
    CandidateReport &c = res.candidates[2 + i];
    const std::string problem = fill_pdl_candidate(c, chain_tactic(p.choice), p.seconds, p.spread,
                                                   p.mismatches, p.check_replays, t.off_s);
    const bool picked = decision.choice == p.choice;
    c.reason = picked             ? "picked"
               : !problem.empty() ? problem
                                  : "not faster by the " + margin_text();
    if (picked)
      res.pick_index = 2 + i;
  }
  on.reason = res.pick_index == 1   ? "picked"
              : !on_problem.empty() ? on_problem
              : pdl_chain_wins(t.off_s, t.on_s, t.mismatches)
                  ? "beaten by " + res.candidates[res.pick_index].tactic.str()
                  : "PDL not faster than PDL off by the " + margin_text();
  res.noise_floor = t.off_spread;
  res.margin = TunerOptions{}.min_margin;
  res.pick_s = res.pick_index == 0   ? t.off_s
               : res.pick_index == 1 ? t.on_s
                                     : t.variants[res.pick_index - 2].seconds;
  res.ratio = t.off_s > 0 && res.pick_index != 0 ? res.pick_s / t.off_s : 1;
  res.default_s = t.off_s;
  return r;
}

ChainLookup find_chain_pick(const Cache &cache, const Shape &bucket,
                            const std::string &device_model, const Metadata &current) {
  const DecodeStepChainOp &op = chain_op();
  ChainLookup r;
  r.key = cache_key(op, bucket, device_model);
  if (const CacheEntry *e = cache.find_any(r.key)) {
    r.entry = *e;
    Tactic pick;
    if (std::optional<VerifyItem> problem = entry_problem(*e, op, bucket, current, &pick)) {
      r.status = problem->problem == "stale" ? Lookup::stale : Lookup::unrunnable;
      r.reason = problem->reason;
      return r;
    }
    r.status = Lookup::usable;
    r.choice = op.compile(pick).as<ChainChoice>();
    return r;
  }
  const std::string bucket_text = op.buckets().describe(bucket);
  for (const auto &[key, entry] : cache.entries()) {
    const std::optional<CacheKeyParts> parts = parse_cache_key(key);
    if (!parts || parts->op != kChainOpName || parts->bucket != bucket_text)
      continue;
    r.reason += r.reason.empty() ? "the cache holds this step's chain pick only " : "; ";
    r.reason += parts->version != op.version()
                    ? "of " + std::string(kChainOpName) + " version " + str(parts->version)
                    : "measured on " + parts->device;
  }
  return r;
}

ChainLookup cached_chain_pick(const model::ModelSpec &spec, int64_t batch, int bits, int group,
                              int64_t page_size, const Backend &backend, const Settings &settings) {
  if (!settings.use_cache)
    return {};
  Shape bucket;
  try {
    bucket = chain_bucket(spec, batch, bits, group, page_size);
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::invalid_argument)
      throw;
    return {};
  }
  Cache cache(Cache::default_path(settings));
  try {
    cache.load(); // a damaged file warns once and reads as empty
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::runtime)
      throw;
    std::cerr << "hone: warning: " << e.what() << "; no cached chain pick\n";
    return {};
  }
  ChainLookup found =
      find_chain_pick(cache, bucket, backend.info().model, current_metadata(backend, false));
  if (found.status == Lookup::stale || found.status == Lookup::unrunnable)
    std::cerr << "hone: warning: chain entry " << found.key << " is " << to_string(found.status)
              << " and ignored: " << found.reason << '\n';
  else if (!found.usable() && !found.reason.empty())
    std::cerr << "hone: warning: no chain pick for this step on " << backend.info().model << ": "
              << found.reason << '\n';
  return found;
}

} // namespace hone::cli

#include "hone/tuning_store.h"

#include "hone/backend.h"
#include "hone/error.h"
#include "hone/op.h"
#include "hone/settings.h"

namespace hone {

const char *to_string(Lookup lookup) {
  switch (lookup) {
  case Lookup::usable:
    return "usable";
  case Lookup::absent:
    return "absent";
  case Lookup::stale:
    return "stale";
  case Lookup::unrunnable:
    return "unrunnable";
  }
  return "?";
}

std::optional<VerifyItem> entry_problem(const CacheEntry &entry, const TunableOp &op,
                                        const Shape &bucket, const Metadata &current,
                                        Tactic *tactic) {
  if (std::optional<std::string> why = stale_reason(entry.metadata, current))
    return VerifyItem{entry.key, "stale", *why};
  Tactic parsed;
  try {
    parsed = Tactic::parse(entry.tactic);
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::invalid_argument)
      throw;
    return VerifyItem{entry.key, "unrunnable", e.what()};
  }
  if (std::optional<std::string> why = op.unrunnable_reason(parsed, bucket))
    return VerifyItem{entry.key, "unrunnable", *why};
  if (tactic)
    *tactic = std::move(parsed);
  return std::nullopt;
}

TuningStore::TuningStore(Backend &backend, std::optional<std::filesystem::path> path, bool cold)
    : backend_(backend), cold_(cold), metadata_(current_metadata(backend, cold)) {
  if (path) {
    cache_ = std::make_unique<Cache>(std::move(*path));
    cache_->load();
  }
}

TuningStore TuningStore::open(Backend &backend, const Settings &settings, bool cold) {
  return TuningStore(backend,
                     settings.use_cache ? std::optional(Cache::default_path(settings))
                                        : std::nullopt,
                     cold);
}

std::string TuningStore::key(const TunableOp &op, const Shape &bucket) const {
  return cache_key(op, bucket, backend_.info().model);
}

CacheLookup TuningStore::find(const TunableOp &op, const Shape &bucket) const {
  CacheLookup r;
  r.key = key(op, bucket);
  if (!cache_)
    return r;
  r.entry = cache_->find_any(r.key);
  if (!r.entry)
    return r;
  if (std::optional<VerifyItem> problem = entry_problem(*r.entry, op, bucket, metadata_, &r.tactic)) {
    r.status = problem->problem == "stale" ? Lookup::stale : Lookup::unrunnable;
    r.reason = std::move(problem->reason);
    return r;
  }
  r.status = Lookup::usable;
  return r;
}

TuneReport TuningStore::tune(const TunableOp &op, const Shape &bucket,
                             const TuneOptions &options) const {
  HONE_CHECK(options.measure.cold == cold_,
             "a tune's cold/warm mode must match the store's, or its entry is stale at once");
  return tune_bucket(backend_, op, bucket, options);
}

CacheEntry TuningStore::put(const TuneReport &report) {
  CacheEntry entry = to_cache_entry(report, metadata_);
  if (cache_)
    cache_->put(entry);
  return entry;
}

void TuningStore::save() {
  if (cache_ && cache_->dirty())
    cache_->save();
}

TunedPick TuningStore::find_or_tune(const TunableOp &op, const Shape &bucket,
                                    const TuneOptions &options, bool force) {
  TunedPick p;
  p.found = find(op, bucket);
  if (p.found.usable() && !force) {
    p.tactic = p.found.tactic;
    p.entry = *p.found.entry;
    p.cached = true;
    return p;
  }
  p.report = tune(op, bucket, options);
  p.tactic = p.report->result.pick();
  p.entry = put(*p.report);
  // p.found.entry pointed into the cache's entries, which put() may have replaced.
  p.found.entry = nullptr;
  try {
    save();
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::runtime)
      throw;
    p.save_error = e.what();
  }
  return p;
}

} // namespace hone

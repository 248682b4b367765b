#include "hone/cache_audit.h"

#include <algorithm>
#include <map>
#include <optional>

#include "hone/dtype.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/registry.h"
#include "hone/tuning_store.h"

namespace hone {

const char *to_string(EntryState state) {
  switch (state) {
  case EntryState::fresh:
    return "fresh";
  case EntryState::stale:
    return "stale";
  case EntryState::unrunnable:
    return "unrunnable";
  case EntryState::other_device:
    return "other_device";
  case EntryState::backend_absent:
    return "backend_absent";
  }
  return "?";
}

std::vector<VerifyItem> CacheAudit::problems() const {
  std::vector<VerifyItem> out;
  if (corrupt)
    out.push_back({"", "corrupt", corrupt_reason});
  for (const EntryAudit &e : entries)
    if (e.state == EntryState::stale || e.state == EntryState::unrunnable)
      out.push_back({e.key, to_string(e.state), e.reason});
  return out;
}

size_t CacheAudit::count(EntryState state) const {
  return static_cast<size_t>(std::count_if(entries.begin(), entries.end(),
                                           [&](const EntryAudit &e) { return e.state == state; }));
}

size_t CacheAudit::checked() const {
  return entries.size() - count(EntryState::other_device) - count(EntryState::backend_absent);
}

namespace {

// The backends present here, and the metadata of each in cold and warm mode, looked up once.
class Judges {
public:
  Backend *backend(const std::string &name) {
    for (const std::string &b : available_backends())
      if (b == name)
        return &get_backend(name);
    return nullptr;
  }
  const Metadata &metadata(Backend &backend, bool cold) {
    const std::string id = backend.info().backend + (cold ? "+cold" : "+warm");
    auto it = known_.find(id);
    if (it == known_.end())
      it = known_.emplace(id, current_metadata(backend, cold)).first;
    return it->second;
  }

private:
  std::map<std::string, Metadata> known_;
};

EntryAudit judge(const CacheEntry &e, Judges &judges) {
  EntryAudit a;
  a.key = e.key;
  const auto verdict = [&](EntryState state, std::string reason) {
    a.state = state;
    a.reason = std::move(reason);
    return a;
  };
  const std::optional<CacheKeyParts> parts = parse_cache_key(e.key);
  if (!parts)
    return verdict(EntryState::unrunnable, "the key is not op@version|bucket|dtype|device");
  Backend *backend = judges.backend(e.metadata.backend);
  if (!backend)
    return verdict(EntryState::backend_absent,
                   "backend " + e.metadata.backend + " absent from this build or machine");
  if (parts->device != backend->info().model)
    return verdict(EntryState::other_device, "measured on " + parts->device + ", not this " +
                                                 e.metadata.backend + " device (" +
                                                 backend->info().model + ")");
  const TunableOp *op = Registry::global().find(parts->op, e.metadata.backend);
  if (!op)
    return verdict(EntryState::unrunnable,
                   "this build has no " + e.metadata.backend + " op '" + parts->op + "'");
  if (parts->version != op->version())
    return verdict(EntryState::stale, "op " + parts->op + " version " +
                                          std::to_string(parts->version) +
                                          " != " + std::to_string(op->version()));
  std::optional<Shape> bucket;
  try {
    bucket = op->buckets().parse(parts->bucket, parse_dtype(parts->dtype));
    if (bucket) {
      op->validate(*bucket);
      if (op->buckets().map(*bucket) != bucket)
        bucket.reset();
    }
  } catch (const Error &err) {
    if (err.kind() != ErrorKind::invalid_argument)
      throw;
    return verdict(EntryState::unrunnable, err.what());
  }
  if (!bucket)
    return verdict(EntryState::unrunnable, "'" + parts->bucket + "' " + parts->dtype +
                                               " is not a bucket of " + parts->op);
  const Metadata &current = judges.metadata(*backend, e.mode != "warm");
  if (std::optional<VerifyItem> problem = entry_problem(e, *op, *bucket, current))
    return verdict(problem->problem == "stale" ? EntryState::stale : EntryState::unrunnable,
                   problem->reason);
  return a;
}

} // namespace

CacheAudit audit_cache(const Cache &cache) {
  CacheAudit audit;
  audit.path = cache.path().string();
  audit.corrupt = cache.corrupt();
  audit.corrupt_reason = cache.corrupt_reason();
  Judges judges;
  for (const auto &[key, entry] : cache.entries())
    audit.entries.push_back(judge(entry, judges));
  return audit;
}

} // namespace hone

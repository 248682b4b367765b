// Cache audit: every entry of a tuning cache judged by this build, as `hone cache verify`,
// `hone cache show` and hone_cache_verify() report it. An entry is judged against its own
// backend here (a cuda entry against the cuda device even when the cpu backend is selected):
// stale when its metadata or op version differs, unrunnable when its tactic cannot run in this
// build (TuningStore's test), fresh otherwise. An entry of a backend absent from this build or
// machine, or measured on another device model, cannot be judged and is skipped.
//
//   hone::Cache cache(hone::Cache::default_path());
//   cache.load();
//   hone::CacheAudit audit = hone::audit_cache(cache);
//   for (const hone::VerifyItem &p : audit.problems()) std::cout << p.key << ": " << p.reason;
#pragma once

#include <string>
#include <vector>

#include "hone/cache.h"

namespace hone {

enum class EntryState {
  fresh,          // usable here
  stale,          // other metadata or op version
  unrunnable,     // a tactic this build cannot run, or an op it does not have
  other_device,   // measured on another device model: skipped
  backend_absent, // its backend is not in this build or on this machine: skipped
};
const char *to_string(EntryState state);

struct EntryAudit {
  std::string key;
  EntryState state = EntryState::fresh;
  std::string reason; // why stale, unrunnable or skipped; empty when fresh
};

struct CacheAudit {
  std::string path;
  bool corrupt = false;
  std::string corrupt_reason;
  std::vector<EntryAudit> entries; // in key order

  // The corrupt file (key empty), then stale and unrunnable entries, as VerifyItems.
  std::vector<VerifyItem> problems() const;
  // Entries in `state`.
  size_t count(EntryState state) const;
  // Entries judged (fresh, stale or unrunnable), i.e. not skipped.
  size_t checked() const;
};

// REQUIRES: cache.load() was called.
CacheAudit audit_cache(const Cache &cache);

} // namespace hone

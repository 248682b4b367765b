// TuningStore: the one way from a backend to its picks in the tuning cache. It opens the file,
// finds a usable pick for a bucket or says why there is none (absent, stale, or a tactic this
// build cannot run), tunes a bucket, records the result and saves as it goes, under the
// cache's lock. The dispatcher's lazy tune, `hone tune`, the C API and the benchmark driver
// all go through it, so an entry is judged the same way everywhere.
//
//   hone::TuningStore store = hone::TuningStore::open(backend, hone::settings());
//   hone::TunedPick p = store.find_or_tune(op, bucket, hone::TuneOptions{});
//   run(p.tactic);   // p.cached: read from the file; else tuned now and saved
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "hone/cache.h"
#include "hone/key.h"
#include "hone/tactic.h"
#include "hone/tune.h"

namespace hone {

class Backend;
class TunableOp;
struct Settings;

// What the cache holds for a bucket.
enum class Lookup {
  usable,     // an entry this build can serve
  absent,     // no entry (or the cache is off)
  stale,      // measured under other metadata (hone version, kernels, driver, method)
  unrunnable, // a tactic this build cannot run: garbage, not one of the op's, not compiled in
};
const char *to_string(Lookup lookup);

struct CacheLookup {
  Lookup status = Lookup::absent;
  std::string key;                   // cache key of the bucket
  const CacheEntry *entry = nullptr; // the entry under the key, usable or not; null when absent
  Tactic tactic;                     // the parsed pick, when usable
  std::string reason;                // why stale or unrunnable
  bool usable() const { return status == Lookup::usable; }
};

// The answer of TuningStore::find_or_tune().
struct TunedPick {
  Tactic tactic;
  CacheEntry entry;                 // as read from the cache, or as recorded by the tune
  bool cached = false;              // true: read from the cache, nothing measured
  CacheLookup found;                // what the cache held before (why it was not used)
  std::optional<TuneReport> report; // set when tuned now
  std::string save_error;           // why the save failed (the pick stands); empty when saved
};

// Why `entry`, stored under the key of `op` and `bucket`, cannot serve them under the
// metadata `current`: {key, "stale" | "unrunnable", reason}; nullopt when it can, with the
// parsed pick in *tactic when given.
std::optional<VerifyItem> entry_problem(const CacheEntry &entry, const TunableOp &op,
                                        const Shape &bucket, const Metadata &current,
                                        Tactic *tactic = nullptr);

class TuningStore {
public:
  // The picks of `backend` in the cache file `path` (nullopt: no cache -- find() finds nothing
  // and save() writes nothing), judged against current_metadata(backend, cold). Loads the file:
  // throws Error(runtime) naming it when it exists but cannot be read.
  TuningStore(Backend &backend, std::optional<std::filesystem::path> path, bool cold = true);
  // The store `settings` name: Cache::default_path(settings), or none when settings.use_cache
  // is false (HONE_CACHE=off).
  static TuningStore open(Backend &backend, const Settings &settings, bool cold = true);

  bool enabled() const { return cache_ != nullptr; }
  // REQUIRES: enabled().
  const std::filesystem::path &path() const { return cache_->path(); }
  const Metadata &metadata() const { return metadata_; }
  Backend &backend() const { return backend_; }

  std::string key(const TunableOp &op, const Shape &bucket) const;
  // The pick for `bucket` when the cache holds a usable one, else what it holds and why that
  // cannot be used.
  CacheLookup find(const TunableOp &op, const Shape &bucket) const;
  // Tunes `bucket` (tune_bucket()); records nothing. Throws Error(invalid_argument) for a shape
  // the op rejects or one that does not fit in memory. REQUIRES: options.measure.cold matches
  // the store's.
  TuneReport tune(const TunableOp &op, const Shape &bucket, const TuneOptions &options) const;
  // Records `report` for the next save(); returns the entry as recorded.
  CacheEntry put(const TuneReport &report);
  // Writes what put() recorded since the last save (lock, re-read, merge, rename). Throws
  // Error(runtime) when the file cannot be written; the entries then stay recorded for the
  // next save(). No-op without a cache or with nothing recorded.
  void save();
  // find(); when that is not usable (or `force`), tune(), put() and save(). A failed save is
  // reported in TunedPick::save_error, not thrown: the pick stands.
  TunedPick find_or_tune(const TunableOp &op, const Shape &bucket, const TuneOptions &options,
                         bool force = false);

private:
  Backend &backend_;
  bool cold_;
  Metadata metadata_;
  std::unique_ptr<Cache> cache_;
};

} // namespace hone

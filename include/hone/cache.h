// Persistent tuning cache: one JSON file of entries keyed by cache key, each with the
// metadata it was measured under. A file that was read and failed to parse is reported once,
// treated as empty, and kept aside as tuning-cache.json.corrupt-<timestamp> before the next
// write; a file that cannot be read at all (permissions) is an error naming its path, and is
// never moved. Saving takes a lock file, re-reads, merges, writes a temporary file,
// fsyncs and renames, so concurrent tuners lose nothing.
//
//   hone::Cache cache(hone::Cache::default_path());
//   if (const hone::CacheEntry *e = cache.find(key, metadata)) use(e->tactic);
//   cache.put(entry); cache.save();
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hone/key.h"

namespace hone {

struct Settings;

inline constexpr int kCacheSchema = 1;

struct CacheEntry {
  std::string key; // cache_key()
  Metadata metadata;
  std::string tactic;    // Tactic::str() of the pick
  std::string default_tactic;
  double median_s = 0;   // [seconds] pick, per launch
  double default_s = 0;  // [seconds] default, per launch
  double ratio = 1;      // confirmed pick / default
  double spread = 0;     // noise floor (A/A IQR / median) of the tune
  std::string mode;      // "cold" or "warm"
  std::string date;      // ISO 8601 UTC
};

struct VerifyItem {
  std::string key;
  std::string problem; // "stale" or "corrupt"
  std::string reason;
};

class Cache {
public:
  // $HONE_CACHE_DIR, else $XDG_CACHE_HOME/hone, else $HOME/.cache/hone; plus tuning-cache.json.
  static std::filesystem::path default_path(const Settings &settings);
  // default_path() of the process-wide settings().
  static std::filesystem::path default_path();

  explicit Cache(std::filesystem::path path);
  const std::filesystem::path &path() const { return path_; }

  // Reads the file (missing file = empty). Never throws for bad contents: warns once and
  // marks the file corrupt so the next save keeps it aside. Throws Error(runtime) naming the
  // path when the file exists but cannot be read; the file is left as it is.
  void load();
  bool corrupt() const { return corrupt_; }
  // Why the file is corrupt; empty when it is not.
  const std::string &corrupt_reason() const { return corrupt_reason_; }

  // Entry for `key` whose metadata matches `current`; nullptr when absent or stale.
  const CacheEntry *find(const std::string &key, const Metadata &current) const;
  // Entry for `key` whatever its metadata; nullptr when absent.
  const CacheEntry *find_any(const std::string &key) const;
  const std::map<std::string, CacheEntry> &entries() const { return entries_; }

  // Records an entry to be written by the next save(); replaces any entry with its key.
  void put(CacheEntry entry);
  // Lock, re-read, merge (this object's put() entries win), write temp, fsync, rename.
  // Throws Error(runtime) when the directory cannot be written or the file cannot be read;
  // the put() entries then stay pending for the next save().
  void save();
  // True when put() entries are waiting for save().
  bool dirty() const { return !pending_.empty(); }
  // Stale entries (against `current`) and a corrupt file, with reasons.
  std::vector<VerifyItem> verify(const Metadata &current) const;
  // Removes the file (under the lock).
  void clear();

private:
  std::filesystem::path path_;
  std::map<std::string, CacheEntry> entries_;
  std::map<std::string, CacheEntry> pending_; // put() since the last save()
  bool corrupt_ = false;
  std::string corrupt_reason_;
};

// JSON text of entries (schema kCacheSchema); exposed for tests and `hone cache show`.
std::string cache_to_json(const std::map<std::string, CacheEntry> &entries);
// Throws Error(invalid_argument) naming what is wrong.
std::map<std::string, CacheEntry> cache_from_json(const std::string &text);

} // namespace hone

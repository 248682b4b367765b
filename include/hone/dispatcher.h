// Dispatcher: shape -> tactic for the hot path. The first lookup of a shape resolves it in
// a fixed order -- environment override, then the cache, then (with HONE_AUTOTUNE=1) a
// lazy tune, then the op's default -- and memoises the answer together with the op's parsed
// form of it (TunableOp::compile); every later lookup is a hash of the raw shape and one
// table probe: no allocation, no candidate filtering, no tactic parsing. A cached tactic this
// build cannot run (TunableOp::unrunnable_reason) is ignored with one warning per entry, like
// a stale one, and resolution goes on to the lazy tune or the default.
// A shape outside the op's buckets gets the default and one warning per (op, shape).
//
//   hone::Dispatcher d(backend, hone::DispatcherOptions::from_settings(hone::settings()));
//   const hone::Tactic &t = d.lookup(op, hone::Shape{{8, 4096, 4096}, hone::DType::f32});
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "hone/op.h"
#include "hone/settings.h"
#include "hone/tune.h"

namespace hone {

class Backend;
class TuningStore;

struct DispatcherOptions {
  bool autotune = false;            // Settings::autotune (HONE_AUTOTUNE=1)
  bool use_cache = true;            // Settings::use_cache (HONE_CACHE != off)
  std::filesystem::path cache_path; // Cache::default_path(settings) when empty
  TuneOptions tune;                 // for lazy tuning
  // What the dispatcher takes from the environment: its HONE_TACTIC_* overrides, which win
  // over the cache, and the cache location. Default-constructed: no override, and the cache
  // in ~/.cache/hone.
  Settings settings;

  // autotune and use_cache from `settings`, which are kept for the overrides.
  static DispatcherOptions from_settings(const Settings &settings);
  // from_settings() of a fresh read of the environment (Settings::from_env()), for a caller
  // that has just changed it; the process-wide settings() are read once.
  static DispatcherOptions from_env();
};

enum class Source { env_override, cache, tuned, default_tactic, out_of_bucket };
const char *to_string(Source source);

struct Resolution {
  Tactic tactic;
  Source source = Source::default_tactic;
  std::string key;         // cache key; empty when out of bucket
  CompiledTactic compiled; // op.compile(tactic), built once; what an op's entry point reads
};

class Dispatcher {
public:
  // Opens the cache (TuningStore); a cache file that cannot be read is warned about once and
  // the dispatcher goes on without it.
  Dispatcher(Backend &backend, DispatcherOptions options);
  ~Dispatcher();
  Dispatcher(const Dispatcher &) = delete;
  Dispatcher &operator=(const Dispatcher &) = delete;

  // The tactic for `shape`; the reference stays valid for the dispatcher's lifetime.
  // Throws Error(invalid_argument) when the op rejects the shape.
  const Tactic &lookup(const TunableOp &op, const Shape &shape);
  // lookup() plus where the answer came from.
  const Resolution &resolve(const TunableOp &op, const Shape &shape);

  Backend &backend() { return backend_; }
  const DispatcherOptions &options() const { return options_; }
  // Counts of slow-path resolutions and of lazy tunes, for tests and diagnostics.
  uint64_t resolutions() const { return resolutions_.load(); }
  uint64_t tunes() const { return tunes_.load(); }

private:
  struct Key {
    const TunableOp *op;
    Shape shape;
    friend bool operator==(const Key &a, const Key &b) {
      return a.op == b.op && a.shape == b.shape;
    }
  };
  struct KeyHash {
    size_t operator()(const Key &k) const noexcept;
  };

  Resolution resolve_slow(const TunableOp &op, const Shape &shape);

  Backend &backend_;
  DispatcherOptions options_;
  std::unique_ptr<TuningStore> store_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<Key, std::unique_ptr<Resolution>, KeyHash> table_;
  std::mutex slow_mutex_;              // serialises resolution (and lazy tuning)
  std::set<std::string> warned_keys_;  // unrunnable cache entries warned about (slow_mutex_)
  std::atomic<uint64_t> resolutions_{0};
  std::atomic<uint64_t> tunes_{0};
};

} // namespace hone

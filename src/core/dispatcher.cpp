#include "hone/dispatcher.h"

#include <optional>

#include "hone/backend.h"
#include "hone/error.h"
#include "hone/log.h"
#include "hone/tuning_store.h"

namespace hone {

DispatcherOptions DispatcherOptions::from_settings(const Settings &settings) {
  DispatcherOptions o;
  o.autotune = settings.autotune;
  o.use_cache = settings.use_cache;
  o.settings = settings;
  return o;
}

DispatcherOptions DispatcherOptions::from_env() { return from_settings(Settings::from_env()); }

const char *to_string(Source source) {
  switch (source) {
  case Source::env_override:
    return "env";
  case Source::cache:
    return "cache";
  case Source::tuned:
    return "tuned";
  case Source::default_tactic:
    return "default";
  case Source::out_of_bucket:
    return "out_of_bucket";
  }
  return "?";
}

size_t Dispatcher::KeyHash::operator()(const Key &k) const noexcept {
  return static_cast<size_t>(hash_shape(k.shape) ^
                             (reinterpret_cast<uintptr_t>(k.op) * 0x9e3779b97f4a7c15ull));
}

Dispatcher::Dispatcher(Backend &backend, DispatcherOptions options)
    : backend_(backend), options_(std::move(options)) {
  const bool cold = options_.tune.measure.cold;
  std::optional<std::filesystem::path> path;
  if (options_.use_cache)
    path = options_.cache_path.empty() ? Cache::default_path(options_.settings)
                                       : options_.cache_path;
  try {
    store_ = std::make_unique<TuningStore>(backend_, path, cold);
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::runtime)
      throw;
    // An op call must not fail because the cache file is unreadable: it runs uncached.
    log_warn(std::string(e.what()) + "; dispatching without the tuning cache");
    store_ = std::make_unique<TuningStore>(backend_, std::nullopt, cold);
  }
}

Dispatcher::~Dispatcher() = default;

const Tactic &Dispatcher::lookup(const TunableOp &op, const Shape &shape) {
  return resolve(op, shape).tactic;
}

const Resolution &Dispatcher::resolve(const TunableOp &op, const Shape &shape) {
  const Key key{&op, shape};
  {
    std::shared_lock lock(mutex_);
    auto it = table_.find(key);
    if (it != table_.end())
      return *it->second;
  }
  // Slow path: one resolution at a time, so a lazy tune runs once per shape.
  std::lock_guard slow(slow_mutex_);
  {
    std::shared_lock lock(mutex_);
    auto it = table_.find(key);
    if (it != table_.end())
      return *it->second;
  }
  auto resolution = std::make_unique<Resolution>(resolve_slow(op, shape));
  // A cached tactic has passed TunableOp::unrunnable_reason(), which compiles it; an override
  // the op cannot run has thrown, naming its variable.
  resolution->compiled = op.compile(resolution->tactic);
  ++resolutions_;
  std::unique_lock lock(mutex_);
  auto [it, inserted] = table_.emplace(key, std::move(resolution));
  return *it->second;
}

Resolution Dispatcher::resolve_slow(const TunableOp &op, const Shape &shape) {
  op.validate(shape);
  Resolution r;
  const std::optional<Shape> bucket = op.buckets().map(shape);
  if (!bucket) {
    r.tactic = op.default_tactic(shape);
    r.source = Source::out_of_bucket;
    log_warn(std::string(op.name()) + ": shape " + op.buckets().describe(shape) +
             " is outside the tuned buckets; using the default tactic " + r.tactic.str());
    return r;
  }
  r.key = store_->key(op, *bucket);
  if (std::optional<Tactic> t = op.env_override(*bucket, options_.settings)) {
    r.tactic = std::move(*t);
    r.source = Source::env_override;
    return r;
  }
  const CacheLookup found = store_->find(op, *bucket);
  if (found.usable()) {
    r.tactic = found.tactic;
    r.source = Source::cache;
    return r;
  }
  if (found.status == Lookup::unrunnable && warned_keys_.insert(r.key).second)
    log_warn("cache entry " + r.key + " has a tactic this build cannot run; ignoring it: " +
             found.reason);
  if (options_.autotune) {
    if (std::optional<std::string> shortfall = memory_shortfall(backend_, op, *bucket)) {
      log_warn(std::string(op.name()) + ": lazy tuning of " + r.key + " skipped (" + *shortfall +
               "); using the default tactic");
    } else {
      try {
        TunedPick pick = store_->find_or_tune(op, *bucket, options_.tune, /*force=*/true);
        ++tunes_;
        if (!pick.save_error.empty())
          log_warn(std::string(op.name()) + ": tuned " + r.key + " (pick " + pick.tactic.str() +
                   ", used from now on in this process) but could not save it: " +
                   pick.save_error);
        r.tactic = std::move(pick.tactic);
        r.source = Source::tuned;
        return r;
      } catch (const Error &err) {
        if (err.kind() == ErrorKind::invalid_argument)
          throw;
        log_warn(std::string(op.name()) + ": lazy tuning of " + r.key +
                 " failed; using the default tactic: " + err.what());
      }
    }
  }
  r.tactic = op.default_tactic(*bucket);
  r.source = Source::default_tactic;
  return r;
}

} // namespace hone

#include "hone/dispatcher.h"

#include <cstdlib>
#include <string_view>

#include "hone/backend.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/log.h"

namespace hone {

namespace {
std::string_view env(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}
} // namespace

DispatcherOptions DispatcherOptions::from_env() {
  DispatcherOptions o;
  const std::string_view autotune = env("HONE_AUTOTUNE");
  o.autotune = autotune == "1" || autotune == "on" || autotune == "true";
  o.use_cache = Cache::enabled_by_env();
  return o;
}

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
    : backend_(backend), options_(std::move(options)),
      metadata_(current_metadata(backend, options_.tune.measure.cold)) {
  if (options_.use_cache) {
    cache_ = std::make_unique<Cache>(options_.cache_path.empty() ? Cache::default_path()
                                                                 : options_.cache_path);
    cache_->load();
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
  // The cache branch compiles its tactic itself (one the op cannot run falls through to the
  // next source); every other source is compiled here. An override the op cannot run throws,
  // naming the tactic.
  if (!resolution->compiled)
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
  r.key = cache_key(op, *bucket, backend_.info().model);
  if (std::optional<Tactic> t = op.env_override(*bucket)) {
    r.tactic = std::move(*t);
    r.source = Source::env_override;
    return r;
  }
  if (cache_) {
    if (const CacheEntry *e = cache_->find(r.key, metadata_)) {
      try {
        r.tactic = Tactic::parse(e->tactic);
        r.compiled = op.compile(r.tactic);
        r.source = Source::cache;
        return r;
      } catch (const Error &err) {
        if (err.kind() != ErrorKind::invalid_argument)
          throw;
        log_warn("cache entry " + r.key +
                 " has a tactic the op cannot run; ignoring it: " + err.what());
      }
    }
  }
  if (options_.autotune) {
    try {
      TuneReport report = tune_bucket(backend_, op, *bucket, options_.tune);
      ++tunes_;
      r.tactic = report.result.pick();
      r.source = Source::tuned;
      if (cache_) {
        cache_->put(to_cache_entry(report, metadata_));
        cache_->save();
      }
      return r;
    } catch (const Error &err) {
      if (err.kind() == ErrorKind::invalid_argument)
        throw;
      log_warn(std::string(op.name()) + ": lazy tuning of " + r.key +
               " failed; using the default tactic: " + err.what());
    }
  }
  r.tactic = op.default_tactic(*bucket);
  r.source = Source::default_tactic;
  return r;
}

} // namespace hone

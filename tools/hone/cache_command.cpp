#include "hone/cache_command.h"

#include <iostream>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "hone/cache.h"
#include "hone/format.h"
#include "hone/key.h"
#include "hone/registry.h"
#include "hone/table.h"

namespace hone::cli {

namespace {

// The metadata an entry is judged against: that of its own backend in this build (an entry
// of the cuda backend is judged against the cuda device even under --backend cpu), or
// nullopt when that backend is not present here, so it cannot be judged.
class CurrentMetadata {
public:
  const Metadata *of(const CacheEntry &e) {
    const bool cold = e.mode != "warm";
    const std::string id = e.metadata.backend + (cold ? "+cold" : "+warm");
    auto it = known_.find(id);
    if (it == known_.end()) {
      std::optional<Metadata> m;
      for (const std::string &name : available_backends())
        if (name == e.metadata.backend)
          m = current_metadata(get_backend(name), cold);
      it = known_.emplace(id, m).first;
    }
    return it->second ? &*it->second : nullptr;
  }

private:
  std::map<std::string, std::optional<Metadata>> known_;
};

// "gemv.f32@1|rows=8,n=4096,k=4096|f32|AMD EPYC 7B13" -> its fields split at '|'.
std::vector<std::string> key_fields(const std::string &key) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t bar; (bar = key.find('|', start)) != std::string::npos; start = bar + 1)
    fields.push_back(key.substr(start, bar - start));
  fields.push_back(key.substr(start));
  fields.resize(4);
  return fields;
}

} // namespace

CacheCommand::CacheCommand(CLI::App &parent)
    : app_(parent.add_subcommand("cache", "Inspect, verify or clear the tuning cache")) {
  app_->require_subcommand(1);
  path_ = app_->add_subcommand("path", "Print the cache file's path");
  show_ = app_->add_subcommand("show", "List the entries");
  show_->add_flag("--json", json_, "Print the entries as the cache's JSON");
  verify_ = app_->add_subcommand("verify", "List stale and corrupt entries; exit 1 when any");
  clear_ = app_->add_subcommand("clear", "Remove the cache file (a corrupt one is kept aside)");
}

int CacheCommand::run() {
  const std::filesystem::path path = Cache::default_path();
  if (path_->parsed()) {
    std::cout << path.string() << '\n';
    if (!Cache::enabled_by_env())
      std::cerr << "note: HONE_CACHE=off: tuning and dispatch ignore this file\n";
    return 0;
  }
  if (show_->parsed())
    return show();
  if (verify_->parsed())
    return verify();
  Cache cache(path);
  cache.clear();
  std::cout << "cleared " << path.string() << '\n';
  return 0;
}

int CacheCommand::show() const {
  Cache cache(Cache::default_path());
  cache.load();
  if (json_) {
    std::cout << cache_to_json(cache.entries()) << '\n';
    return 0;
  }
  std::cout << "cache " << cache.path().string() << ": " << cache.entries().size() << " entr"
            << (cache.entries().size() == 1 ? "y" : "ies") << (cache.corrupt() ? " (corrupt)" : "")
            << '\n';
  if (cache.entries().empty())
    return 0;
  CurrentMetadata current;
  Table table({"op", "bucket", "dtype", "device", "pick", "ratio", "spread", "time", "mode", "date",
               "state"},
              {false, false, false, false, false, true, true, true, false, false, false});
  for (const auto &[key, e] : cache.entries()) {
    std::vector<std::string> f = key_fields(key);
    const std::string op_name = f[0].substr(0, f[0].find('@'));
    std::string state = "not checked (backend " + e.metadata.backend + " absent)";
    if (const Metadata *m = current.of(e)) {
      const std::optional<std::string> why = stale_reason(e.metadata, *m);
      state = why ? "stale: " + *why : "fresh";
    }
    const bool kept = e.tactic == e.default_tactic;
    table.add({f[0], f[1], f[2], f[3], kept ? "(default)" : short_tactic(e.tactic, op_name),
               format_ratio(e.ratio), format_percent(e.spread), format_seconds(e.median_s), e.mode,
               e.date, state});
  }
  table.print(std::cout);
  return 0;
}

int CacheCommand::verify() const {
  Cache cache(Cache::default_path());
  cache.load();
  std::vector<VerifyItem> problems;
  if (cache.corrupt()) {
    // Cache::verify() reports a corrupt file whatever the metadata it is given.
    for (const VerifyItem &item : cache.verify(Metadata{}))
      if (item.problem == "corrupt")
        problems.push_back(item);
  }
  CurrentMetadata current;
  int unchecked = 0;
  for (const auto &[key, e] : cache.entries()) {
    const Metadata *m = current.of(e);
    if (!m) {
      ++unchecked;
      continue;
    }
    if (std::optional<std::string> why = stale_reason(e.metadata, *m))
      problems.push_back({key, "stale", *why});
  }
  for (const VerifyItem &item : problems)
    std::cout << item.problem << "  " << (item.key.empty() ? cache.path().string() : item.key)
              << "  " << item.reason << '\n';
  if (unchecked > 0)
    std::cout << unchecked << " entr" << (unchecked == 1 ? "y" : "ies")
              << " of backends absent from this build or machine not checked\n";
  if (!problems.empty()) {
    std::cout << problems.size() << " problem" << (problems.size() == 1 ? "" : "s") << " in "
              << cache.path().string() << '\n';
    return 1;
  }
  std::cout << "clean: " << cache.entries().size() - unchecked << " entr"
            << (cache.entries().size() - unchecked == 1 ? "y" : "ies") << " checked in "
            << cache.path().string() << '\n';
  return 0;
}

} // namespace hone::cli

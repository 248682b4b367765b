#include "hone/cache_command.h"

#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hone/cache.h"
#include "hone/cache_audit.h"
#include "hone/format.h"
#include "hone/key.h"
#include "hone/settings.h"
#include "hone/table.h"

namespace hone::cli {

namespace {

// "3 entries" / "1 entry".
std::string entries_text(size_t n) {
  return std::to_string(n) + (n == 1 ? " entry" : " entries");
}

} // namespace

CacheCommand::CacheCommand(CLI::App &parent)
    : app_(parent.add_subcommand("cache", "Inspect, verify or clear the tuning cache")) {
  app_->require_subcommand(1);
  path_ = app_->add_subcommand("path", "Print the cache file's path");
  show_ = app_->add_subcommand("show", "List the entries");
  show_->add_flag("--json", json_, "Print the entries as the cache's JSON");
  verify_ = app_->add_subcommand("verify", "List stale, unrunnable and corrupt entries; exit 1 when any");
  clear_ = app_->add_subcommand("clear", "Remove the cache file (a corrupt one is kept aside)");
}

int CacheCommand::run() {
  const std::filesystem::path path = Cache::default_path();
  if (path_->parsed()) {
    std::cout << path.string() << '\n';
    if (!settings().use_cache)
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
  std::cout << "cache " << cache.path().string() << ": " << entries_text(cache.entries().size())
            << (cache.corrupt() ? " (corrupt)" : "") << '\n';
  if (cache.entries().empty())
    return 0;
  const CacheAudit audit = audit_cache(cache);
  Table table({"op", "bucket", "dtype", "device", "pick", "ratio", "spread", "time", "mode", "date",
               "state"},
              {false, false, false, false, false, true, true, true, false, false, false});
  for (const EntryAudit &a : audit.entries) {
    const CacheEntry &e = cache.entries().at(a.key);
    CacheKeyParts f;
    f.op = a.key; // a malformed key is shown whole
    f = parse_cache_key(a.key).value_or(f);
    const std::string &op_name = f.op;
    const bool skipped =
        a.state == EntryState::other_device || a.state == EntryState::backend_absent;
    const std::string state = a.state == EntryState::fresh ? "fresh"
                              : skipped ? "not checked (" + a.reason + ")"
                                        : std::string(to_string(a.state)) + ": " + a.reason;
    const bool kept = e.tactic == e.default_tactic;
    table.add({op_name + "@" + std::to_string(f.version), f.bucket, f.dtype, f.device,
               kept ? "(default)" : short_tactic(e.tactic, op_name), format_ratio(e.ratio),
               format_percent(e.spread), format_seconds(e.median_s), e.mode, e.date, state});
  }
  table.print(std::cout);
  return 0;
}

int CacheCommand::verify() const {
  Cache cache(Cache::default_path());
  cache.load();
  const CacheAudit audit = audit_cache(cache);
  const std::vector<VerifyItem> problems = audit.problems();
  for (const VerifyItem &item : problems)
    std::cout << item.problem << "  " << (item.key.empty() ? audit.path : item.key) << "  "
              << item.reason << '\n';
  for (const EntryAudit &a : audit.entries)
    if (a.state == EntryState::other_device || a.state == EntryState::backend_absent)
      std::cout << "skipped  " << a.key << "  " << a.reason << '\n';
  const size_t skipped = audit.entries.size() - audit.checked();
  if (skipped > 0)
    std::cout << entries_text(skipped) << " skipped: "
              << audit.count(EntryState::other_device) << " of another device, "
              << audit.count(EntryState::backend_absent) << " of a backend absent here\n";
  if (!problems.empty()) {
    std::cout << problems.size() << " problem" << (problems.size() == 1 ? "" : "s") << " in "
              << audit.path << '\n';
    return 1;
  }
  std::cout << "clean: " << entries_text(audit.checked()) << " checked in " << audit.path << '\n';
  return 0;
}

} // namespace hone::cli

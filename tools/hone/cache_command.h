// `hone cache`: the tuning cache file -- where it is, what it holds, whether its entries are
// still valid here, and removing it.
//
//   hone cache path
//   hone cache show [--json]
//   hone cache verify        # exit 1 when an entry is stale or unrunnable, or the file corrupt
//   hone cache clear
#pragma once

namespace CLI {
class App;
}

namespace hone::cli {

class CacheCommand {
public:
  explicit CacheCommand(CLI::App &parent);
  CLI::App *app() const { return app_; }
  int run();

private:
  int show() const;
  int verify() const;

  CLI::App *app_;
  CLI::App *path_;
  CLI::App *show_;
  CLI::App *verify_;
  CLI::App *clear_;
  bool json_ = false;
};

} // namespace hone::cli

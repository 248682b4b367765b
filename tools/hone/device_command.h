// `hone device`: what the selected backend knows about its device -- the facts that enter
// cache keys and metadata, and the cold-LLC rotation a working set would get.
//
//   hone device --working-set 64M
//   hone --backend cuda device --bandwidth
#pragma once

#include <string>

#include "hone/global_options.h"

namespace CLI {
class App;
}

namespace hone::cli {

struct DeviceOptions {
  std::string working_set = "16M"; // [bytes] per launch, for the rotation plan
  bool bandwidth = false;          // run the backend's read-bandwidth probe
};

class DeviceCommand {
public:
  DeviceCommand(CLI::App &parent, const GlobalOptions &global);
  CLI::App *app() const { return app_; }
  // Prints the report; returns the exit code.
  int run();

private:
  const GlobalOptions &global_;
  CLI::App *app_;
  DeviceOptions options_;
};

} // namespace hone::cli

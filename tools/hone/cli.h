// The `hone` command line: global options and one object per subcommand. main() parses,
// runs, and maps errors to exit codes in one place.
//
//   hone::cli::Cli cli;
//   cli.parse(argc, argv);   // throws CLI::ParseError
//   return cli.run();        // throws hone::Error
#pragma once

#include <memory>

#include "hone/global_options.h"

namespace CLI {
class App;
class ParseError;
} // namespace CLI

namespace hone::cli {

class BenchCommand;
class CacheCommand;
class DequantizeCommand;
class DeviceCommand;
class QuantizeCommand;
class StepCommand;
class SweepCommand;
class TuneCommand;

// Exit codes: 0 success; 1 a runtime failure or a negative verdict (`cache verify` found
// problems); 2 bad usage or input.
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

class Cli {
public:
  Cli();
  ~Cli();
  // Throws CLI::ParseError for bad usage (and for --help, which exit() turns into 0).
  void parse(int argc, char **argv);
  // Runs the chosen subcommand; returns its exit code. Throws hone::Error.
  int run();
  // Prints a parse error (or the help it stands for); returns 0 for help, kExitUsage else.
  int exit(const CLI::ParseError &error);

private:
  std::unique_ptr<CLI::App> app_;
  GlobalOptions global_;
  std::unique_ptr<DeviceCommand> device_;
  std::unique_ptr<TuneCommand> tune_;
  std::unique_ptr<BenchCommand> bench_;
  std::unique_ptr<CacheCommand> cache_;
  std::unique_ptr<QuantizeCommand> quantize_;
  std::unique_ptr<DequantizeCommand> dequantize_;
  std::unique_ptr<StepCommand> step_;
  std::unique_ptr<SweepCommand> sweep_;
};

} // namespace hone::cli

#include "hone/cli.h"

#include <CLI/CLI.hpp>

#include "hone/bench_command.h"
#include "hone/build_info.h"
#include "hone/cache_command.h"
#include "hone/dequantize_command.h"
#include "hone/device_command.h"
#include "hone/error.h"
#include "hone/quantize_command.h"
#include "hone/step_command.h"
#include "hone/sweep_command.h"
#include "hone/tune_command.h"

namespace hone::cli {

Cli::Cli() : app_(std::make_unique<CLI::App>("hone: a kernel autotuner", "hone")) {
  app_->set_version_flag("--version", std::string("hone ") + HONE_VERSION_STRING);
  app_->add_option("--backend", global_.backend, "Backend: cpu or cuda (default: the best present)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app_->require_subcommand(1);
  // Global options are accepted after the subcommand too: `hone bench --backend cuda ...`.
  app_->fallthrough();
  device_ = std::make_unique<DeviceCommand>(*app_, global_);
  tune_ = std::make_unique<TuneCommand>(*app_, global_);
  bench_ = std::make_unique<BenchCommand>(*app_, global_);
  cache_ = std::make_unique<CacheCommand>(*app_);
  quantize_ = std::make_unique<QuantizeCommand>(*app_);
  dequantize_ = std::make_unique<DequantizeCommand>(*app_);
  step_ = std::make_unique<StepCommand>(*app_, global_);
  sweep_ = std::make_unique<SweepCommand>(*app_, global_);
  app_->footer("Environment: HONE_CACHE_DIR (cache location), HONE_CACHE=off (ignore the cache),\n"
               "HONE_TACTIC_<OP> (force a tactic); every HONE_* variable: README, Environment.\n"
               "Exit codes: 0 ok, 1 runtime failure or `cache verify` problems, 2 bad usage.");
}

Cli::~Cli() = default;

namespace {

// The subcommand names of `app`, comma-separated.
std::string subcommand_names(const CLI::App &app) {
  std::string names;
  for (const CLI::App *sub : app.get_subcommands({}))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// CLI11 reports `hone nosuch` (and `hone cache nosuch`) as "A subcommand is required": the word
// left over is an unknown subcommand of the deepest subcommand parsed, named here.
void throw_unknown_subcommand(const CLI::App &root) {
  const std::vector<std::string> left = root.remaining(true);
  const CLI::App *app = &root;
  while (!app->get_subcommands().empty())
    app = app->get_subcommands().front();
  if (left.empty() || app->get_subcommands({}).empty())
    return;
  const std::string of = app == &root ? "" : " of '" + app->get_name() + "'";
  throw CLI::ExtrasError("unknown subcommand '" + left.front() + "'" + of +
                             " (expected one of: " + subcommand_names(*app) + ")",
                         CLI::ExitCodes::ExtrasError);
}

} // namespace

void Cli::parse(int argc, char **argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::RequiredError &) {
    throw_unknown_subcommand(*app_);
    throw;
  }
}

int Cli::run() {
  if (device_->app()->parsed())
    return device_->run();
  if (tune_->app()->parsed())
    return tune_->run();
  if (bench_->app()->parsed())
    return bench_->run();
  if (cache_->app()->parsed())
    return cache_->run();
  if (quantize_->app()->parsed())
    return quantize_->run();
  if (dequantize_->app()->parsed())
    return dequantize_->run();
  if (step_->app()->parsed())
    return step_->run();
  if (sweep_->app()->parsed())
    return sweep_->run();
  HONE_RUNTIME_ERROR("no subcommand was parsed");
}

int Cli::exit(const CLI::ParseError &error) {
  const int code = app_->exit(error);
  return code == 0 ? 0 : kExitUsage;
}

} // namespace hone::cli

// hone: tune, benchmark and inspect kernel tactics from the command line. Every error is
// caught here once and mapped to an exit code (see cli.h).
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "hone/cli.h"
#include "hone/error.h"

int main(int argc, char **argv) {
  hone::cli::Cli cli;
  try {
    cli.parse(argc, argv);
    return cli.run();
  } catch (const CLI::ParseError &e) {
    return cli.exit(e);
  } catch (const hone::Error &e) {
    std::cerr << "hone: error: " << e.what() << '\n';
    return e.kind() == hone::ErrorKind::invalid_argument ? hone::cli::kExitUsage
                                                         : hone::cli::kExitRuntime;
  } catch (const std::exception &e) {
    std::cerr << "hone: error: " << e.what() << '\n';
    return hone::cli::kExitRuntime;
  }
}

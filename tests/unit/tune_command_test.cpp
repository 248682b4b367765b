// `hone tune`'s options as its run reads them (tools/hone/tune_command), in process on the CPU
// backend with --dry-run and the cache off: nothing is measured and nothing is written.
#include "hone/tune_command.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hone/cli.h"
#include "invalid_message.h"

namespace hone::cli {
namespace {

using hone::testing::invalid_message;

class TuneCommandTest : public ::testing::Test {
protected:
  // Before the first settings() of this process, which reads the environment once.
  static void SetUpTestSuite() { ::setenv("HONE_CACHE", "off", 1); }

  // `hone --backend cpu tune <built-in model> --ops gemv.f32 --rows 1 --dry-run <extra>`: its
  // exit code. The chain options are parsed with the model's matrix, chain op or not.
  static int dry_run(const std::vector<std::string> &extra) {
    std::vector<std::string> words{"hone",     "--backend", "cpu", "tune",     "--ops",
                                   "gemv.f32", "--rows",    "1",   "--dry-run"};
    words.insert(words.end(), extra.begin(), extra.end());
    std::vector<char *> argv;
    for (std::string &w : words)
      argv.push_back(w.data());
    Cli cli;
    cli.parse(static_cast<int>(argv.size()), argv.data());
    return cli.run();
  }
};

TEST_F(TuneCommandTest, ChainBatchesTakeTheBatchGridOfSweep) {
  EXPECT_EQ(dry_run({"--chain-batches", "1-16"}), 0);
  EXPECT_EQ(dry_run({"--chain-batches", "1,4,16"}), 0);
  EXPECT_EQ(dry_run({"--chain-batches", "32"}), 0);
}

TEST_F(TuneCommandTest, BadChainBatchesAreNamed) {
  // {value, what the message must hold}
  const std::vector<std::pair<std::string, std::string>> cases{
      {"4k", "'4k' is not a positive integer"},
      {"0", "'0' is not a positive integer"},
      {"64", "batch 64 is beyond the decode step's limit of 32"},
      {"1-64", "batch 64 is beyond"},
      {"16-1", "range '16-1' is reversed"},
      {"1,4,4", "'4' is listed twice in '1,4,4'"},
      {"1,,4", "'' is not a positive integer"},
      {"", "empty"}};
  for (const auto &[value, want] : cases) {
    const std::string m = invalid_message([&] { dry_run({"--chain-batches", value}); });
    EXPECT_EQ(m.rfind("--chain-batches: ", 0), 0u) << value << ": " << m;
    EXPECT_NE(m.find(want), std::string::npos) << value << ": " << m;
  }
}

} // namespace
} // namespace hone::cli

// What `hone sweep` does after the cells, without a device (tools/hone/sweep_command): it writes
// sweep.md and sweep.json, then draws the charts with scripts/plot_sweep.py, and says why when
// it cannot.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "hone/sweep_command.h"
#include "hone/sweep_report.h"
#include "sweep_cells.h"

namespace hone::cli {
namespace {

namespace fs = std::filesystem;

// tests/unit/<this file> -> <source root>/scripts/plot_sweep.py.
const fs::path kScript =
    fs::path(__FILE__).parent_path().parent_path().parent_path() / "scripts" / "plot_sweep.py";

fs::path fresh_dir(const std::string &name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("hone-sweep-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

SweepReport report(bool with_peer) {
  SweepReport r;
  r.model = "tiny";
  r.family = "llama";
  r.quant = "int4:g64";
  r.device.model = "test device";
  r.batches = {1, 2};
  r.contexts = {1024, 2048};
  r.cells = {testing::ran_cell(1, 1024, 90, 81), testing::ran_cell(1, 2048, 95, 86),
             testing::ran_cell(2, 1024, 80, 72), testing::skipped_cell(2, 2048, "needs more")};
  if (with_peer) {
    r.peer = PeerSteps{"torch.json", "torch", "test device", {{{1, 1024}, 120e-6}}};
    r.cells[0].peer_seconds = 120e-6;
  }
  return r;
}

bool python_has_matplotlib() {
  return std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
}

TEST(SweepOutput, WritesTheTableAndTheJson) {
  const fs::path dir = fresh_dir("files");
  const auto written = write_sweep_report(report(false), dir);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0], dir / "sweep.md");
  EXPECT_EQ(written[1], dir / "sweep.json");
  std::ostringstream md;
  md << std::ifstream(written[0]).rdbuf();
  EXPECT_EQ(md.str(), sweep_markdown(report(false)));
  std::ostringstream json;
  json << std::ifstream(written[1]).rdbuf();
  EXPECT_EQ(nlohmann::json::parse(json.str()), sweep_json(report(false)));
}

TEST(SweepOutput, AMissingScriptIsAWarningNamingIt) {
  const fs::path dir = fresh_dir("noscript");
  const auto written = write_sweep_report(report(false), dir);
  const std::optional<std::string> why = plot_sweep(dir / "no_such_script.py", written[1], dir);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("no_such_script.py"), std::string::npos) << *why;
}

TEST(SweepOutput, AFailingScriptIsAWarning) {
  const fs::path dir = fresh_dir("badjson");
  std::ofstream(dir / "sweep.json") << "{\"format\": \"other\"}\n";
  const std::optional<std::string> why = plot_sweep(kScript, dir / "sweep.json", dir);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("exit status 2"), std::string::npos) << *why;
}

TEST(SweepOutput, ChartsOfOneUnitEach) {
  if (!python_has_matplotlib())
    GTEST_SKIP() << "python3 with matplotlib is not installed";
  const fs::path dir = fresh_dir("charts");
  const auto written = write_sweep_report(report(true), dir);
  const std::optional<std::string> why = plot_sweep(kScript, written[1], dir);
  EXPECT_FALSE(why.has_value()) << *why;
  for (const char *png : {"step_time.png", "speedup_tuned.png", "speedup_peer.png"})
    EXPECT_TRUE(fs::exists(dir / png) && fs::file_size(dir / png) > 0) << png;

  const fs::path no_peer = fresh_dir("charts-no-peer");
  const auto json = write_sweep_report(report(false), no_peer)[1];
  EXPECT_FALSE(plot_sweep(kScript, json, no_peer).has_value());
  EXPECT_TRUE(fs::exists(no_peer / "step_time.png"));
  EXPECT_FALSE(fs::exists(no_peer / "speedup_peer.png"));
}

} // namespace
} // namespace hone::cli

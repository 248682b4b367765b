// What `hone sweep` parses and writes without a device (tools/hone/sweep_report): the batch and
// context grids, the chain-tactic rule per cell, the peer JSON, the Markdown table and the JSON.
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hone/sweep_report.h"
#include "invalid_message.h"
#include "sweep_cells.h"

namespace hone::cli {
namespace {

using testing::invalid_message;
using testing::ran_cell;
using Grid = std::vector<int64_t>;

TEST(SweepGrid, RangesArePowersOfTwoAndListsAreVerbatim) {
  EXPECT_EQ(parse_batch_grid("1-16"), (Grid{1, 2, 4, 8, 16}));
  EXPECT_EQ(parse_batch_grid("3-20"), (Grid{4, 8, 16}));
  EXPECT_EQ(parse_batch_grid("1-32"), (Grid{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(parse_batch_grid("8-8"), (Grid{8}));
  EXPECT_EQ(parse_batch_grid("4"), (Grid{4}));
  EXPECT_EQ(parse_batch_grid("16,1,3"), (Grid{16, 1, 3}));
  EXPECT_EQ(parse_context_grid("1k-32k"), (Grid{1024, 2048, 4096, 8192, 16384, 32768}));
  EXPECT_EQ(parse_context_grid("1000-5000"), (Grid{1024, 2048, 4096}));
  EXPECT_EQ(parse_context_grid("4k,500,32K"), (Grid{4096, 500, 32768}));
}

// Every `text` of `cases` is refused by `parse` with a message that starts with `option` and
// holds `want`.
void expect_refused(std::vector<int64_t> (*parse)(const std::string &, std::string_view),
                    const char *option,
                    const std::vector<std::pair<const char *, const char *>> &cases) {
  for (const auto &[text, want] : cases) {
    const std::string m = invalid_message([&] { parse(text, option); });
    EXPECT_EQ(m.rfind(std::string(option) + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(want), std::string::npos) << text << ": " << m;
  }
}

TEST(SweepGrid, BadValuesAreNamed) {
  // {text, what the message must hold}
  expect_refused(parse_batch_grid, "--batch",
                 {{"16-1", "range '16-1' is reversed"},
                  {"0", "'0' is not a positive integer"},
                  {"0-4", "'0' is not a positive integer"},
                  {"x", "'x' is not a positive integer"},
                  {"1-x", "'x' is not a positive integer (e.g. 1, 16) (in the range '1-x')"},
                  {"1-64", "batch 64 is beyond the decode step's limit of 32"},
                  {"33", "batch 33 is beyond"},
                  {"1,2,2", "'2' is listed twice in '1,2,2'"},
                  {"20-30", "range '20-30' holds no power of two"},
                  {"1,4-8", "'4-8' in '1,4-8' is not a value"},
                  {"1,,2", "'' is not a positive integer"},
                  {"", "empty"},
                  {"1-2-4", "'1-2-4' is not a range a-b"}});
  expect_refused(parse_context_grid, "--context",
                 {{"32k-1k", "range '32k-1k' is reversed (32768 > 1024)"},
                  {"0", "'0' is not a positive token count"},
                  {"1.5k-4k", "'1.5k' is not a positive token count"},
                  {"4m", "'4m' is not a positive token count"}});
}

TEST(SweepCell, ChainTacticIsPdlOnlyWhenBitIdenticalAndTwoPercentFaster) {
  EXPECT_EQ(ran_cell(1, 1024, 90, 85).tuned().name, "tuned+pdl");      // 5.6 % faster
  EXPECT_EQ(ran_cell(1, 1024, 90, 89).tuned().name, "tuned");          // 1.1 %: within the margin
  EXPECT_EQ(ran_cell(1, 1024, 90, 80, 3).tuned().name, "tuned");       // replays differ
  EXPECT_EQ(ran_cell(1, 1024, 90, 80, -1).tuned().name, "tuned");      // never checked
  EXPECT_DOUBLE_EQ(ran_cell(1, 1024, 80, 90).speedup(), 100.0 / 80.0); // default / tuned
  EXPECT_DOUBLE_EQ(ran_cell(1, 1024, 90, 80).speedup(), 100.0 / 80.0);
}

SweepReport report(bool with_peer) {
  SweepReport r;
  r.model = "qwen2.5-1.5b";
  r.family = "qwen2";
  r.layers = 28;
  r.quant = "bf16";
  r.device.model = "NVIDIA H200";
  r.read_bandwidth = 4e12;
  r.samples = 9;
  r.check_replays = 100;
  r.batches = {1, 16};
  r.contexts = {1024, 32768};
  r.cells = {ran_cell(1, 1024, 90, 80), ran_cell(1, 32768, 90, 89), ran_cell(16, 1024, 95, 70, 12),
             testing::skipped_cell(16, 32768, "needs 150.00 GB, 139.00 GB free")};
  if (with_peer) {
    PeerSteps p;
    p.source = "torch.json";
    p.peer = "torch.matmul (cuBLAS)";
    p.device = "NVIDIA H200";
    p.seconds[{1, 1024}] = 120e-6;
    p.seconds[{16, 1024}] = 190e-6;
    r.peer = p;
    r.cells[0].peer_seconds = 120e-6;
    r.cells[2].peer_seconds = 190e-6;
  }
  return r;
}

bool has_line(const std::string &text, const std::string &pattern) {
  return std::regex_search(text, std::regex("(^|\n)" + pattern + "(\n|$)"));
}

TEST(SweepMarkdown, OneRowPerCellWithChainSpeedupAndBandwidth) {
  const std::string md = sweep_markdown(report(false));
  EXPECT_TRUE(has_line(md, "# hone sweep: qwen2.5-1.5b, bf16 weights, NVIDIA H200")) << md;
  EXPECT_NE(md.find("warm, CUDA graph, interleaved, median of 9"), std::string::npos) << md;
  EXPECT_TRUE(has_line(md, R"(\| batch \| context \| default us \| tuned us \| chain \| speed-up )"
                           R"(\| of read bw \|)"))
      << md;
  // 400 MB per step in 80 us = 5 TB/s, 1.25 of 4 TB/s.
  EXPECT_TRUE(has_line(md, R"(\| 1 \| 1024 \| 100\.0 \| 80\.0 \| pdl on \| 1\.250x \| 1\.250 \|)"))
      << md;
  EXPECT_TRUE(
      has_line(md, R"(\| 1 \| 32768 \| 100\.0 \| 90\.0 \| pdl off \| 1\.111x \| 1\.111 \|)"))
      << md;
  EXPECT_TRUE(has_line(md,
                       R"(\| 16 \| 1024 \| 100\.0 \| 95\.0 \| pdl off \(PDL REJECTED: 12 words )"
                       R"(differ over 100 replays\) \| 1\.053x \| 1\.053 \|)"))
      << md;
  EXPECT_TRUE(has_line(
      md, R"(\| 16 \| 32768 \| skipped: needs 150\.00 GB, 139\.00 GB free \| \| \| \| \|)"))
      << md;
  EXPECT_EQ(md.find("peer"), std::string::npos) << md;
}

TEST(SweepMarkdown, PeerColumnsShowADashWithoutPeerData) {
  const std::string md = sweep_markdown(report(true));
  EXPECT_TRUE(has_line(md, R"(\| batch \| context \| default us \| tuned us \| chain \| speed-up )"
                           R"(\| of read bw \| peer us \| vs peer \|)"))
      << md;
  EXPECT_TRUE(has_line(md, R"(\| 1 \| 1024 \| 100\.0 \| 80\.0 \| pdl on \| 1\.250x \| 1\.250 \| )"
                           R"(120\.0 \| 1\.500x \|)"))
      << md;
  EXPECT_TRUE(has_line(md, R"(\| 1 \| 32768 \| .* \| - \| - \|)")) << md;
  EXPECT_TRUE(has_line(md, R"(\| 16 \| 32768 \| skipped: .* \| \| \| \| \| \| \|)")) << md;
  EXPECT_EQ(md.find("representation change"), std::string::npos) << md;
  SweepReport int4 = report(true);
  int4.quant = "int4:g64";
  EXPECT_NE(sweep_markdown(int4).find("vs peer is a representation change"), std::string::npos);
}

TEST(SweepJson, EveryNumberAndTheMethod) {
  const nlohmann::json j = sweep_json(report(true));
  EXPECT_EQ(j["format"], "hone.sweep");
  EXPECT_EQ(j["mode"], "warm");
  EXPECT_EQ(j["method"], "warm, CUDA graph, interleaved, median of 9");
  EXPECT_EQ(j["device"]["model"], "NVIDIA H200");
  EXPECT_EQ(j["batches"], (Grid{1, 16}));
  EXPECT_EQ(j["contexts"], (Grid{1024, 32768}));
  EXPECT_EQ(j["peer"]["representation_change"], false);
  ASSERT_EQ(j["cells"].size(), 4u);
  const nlohmann::json &c = j["cells"][0];
  EXPECT_EQ(c["status"], "ok");
  EXPECT_EQ(c["chain"], "tuned+pdl");
  EXPECT_DOUBLE_EQ(c["default_s"].get<double>(), 100e-6);
  EXPECT_DOUBLE_EQ(c["tuned_s"].get<double>(), 80e-6);
  EXPECT_DOUBLE_EQ(c["speedup"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(c["read_fraction"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(c["speedup_vs_peer"].get<double>(), 1.5);
  EXPECT_EQ(c["bytes_per_step"], 400'000'000u);
  EXPECT_EQ(c["variants"].size(), 4u);
  EXPECT_EQ(c["variants"][3]["mismatches"], 0);
  EXPECT_TRUE(j["cells"][1]["peer_s"].is_null());
  EXPECT_EQ(j["cells"][2]["variants"][3]["mismatches"], 12);
  EXPECT_EQ(j["cells"][3]["status"], "skipped");
  EXPECT_EQ(j["cells"][3]["note"], "needs 150.00 GB, 139.00 GB free");
  EXPECT_TRUE(sweep_json(report(false))["peer"].is_null());
}

const char *kPeerJson = R"({"format": "hone.peer.decode_step_torch", "format_version": 1,
  "peer": "torch.matmul (cuBLAS) + SDPA", "device": "NVIDIA H200",
  "results": [
    {"model": "qwen2.5-1.5b", "batch": 1, "context": 4096, "seconds": 0.0002},
    {"model": "llama-3.1-8b", "batch": 1, "context": 4096, "seconds": 0.003},
    {"model": "qwen2.5-1.5b", "batch": 16, "context": 4096, "seconds": 0.0004}],
  "skipped": [{"model": "qwen2.5-1.5b", "batch": 32, "context": 32768, "reason": "memory"}]})";

TEST(SweepPeer, RecordsOfTheModelByBatchAndContext) {
  const PeerSteps p = parse_peer_steps(kPeerJson, "torch.json", "qwen2.5-1.5b");
  EXPECT_EQ(p.peer, "torch.matmul (cuBLAS) + SDPA");
  EXPECT_EQ(p.device, "NVIDIA H200");
  ASSERT_EQ(p.seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(p.seconds.at({1, 4096}), 0.0002);
  EXPECT_DOUBLE_EQ(p.seconds.at({16, 4096}), 0.0004);
}

TEST(SweepPeer, BadFilesAreNamed) {
  const auto message = [](const std::string &text, const char *model = "qwen2.5-1.5b") {
    return invalid_message([&] { parse_peer_steps(text, "torch.json", model); });
  };
  EXPECT_NE(message("{").find("--peer torch.json: not valid JSON"), std::string::npos);
  EXPECT_NE(message(R"({"format": "hone.sweep", "results": []})").find("field 'format'"),
            std::string::npos);
  EXPECT_NE(message(kPeerJson, "llama-3.2-1b")
                .find("no result for model 'llama-3.2-1b' (it holds: llama-3.1-8b, qwen2.5-1.5b)"),
            std::string::npos);
  EXPECT_NE(message(R"({"format": "hone.peer.decode_step_torch", "results": [{"model":
      "qwen2.5-1.5b", "batch": 0, "context": 4096, "seconds": 1}]})")
                .find("results[0]: field 'batch' must be a positive integer"),
            std::string::npos);
  EXPECT_NE(message(R"({"format": "hone.peer.decode_step_torch", "results": [{"model":
      "qwen2.5-1.5b", "batch": 1, "context": 4096}]})")
                .find("results[0]: missing field 'seconds'"),
            std::string::npos);
}

} // namespace
} // namespace hone::cli

// Checkpoint (src/model/checkpoint): a safetensors file, a directory with model.safetensors, and
// a sharded directory whose model.safetensors.index.json names the shards; every malformed
// checkpoint named by its path.
#include "model/checkpoint.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "invalid_message.h"
#include "model/safetensors_writer.h"

namespace hone::model {
namespace {

class CheckpointTest : public ::testing::Test {
protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("hone_checkpoint_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  template <class F> std::string invalid(F call) { return testing::invalid_message(call); }

  // A file of one bf16 tensor [2] holding {value, value + 1}.
  void write_one(const std::filesystem::path &path, const std::string &name, uint16_t value) {
    const std::vector<uint16_t> v = {value, static_cast<uint16_t>(value + 1)};
    SafetensorsWriter w(path, {{name, "BF16", {2}}});
    w.write(name, v.data(), 4);
    w.finish();
  }
  void write_text(const std::filesystem::path &path, const std::string &text) {
    std::ofstream(path) << text;
  }
};

TEST_F(CheckpointTest, AShardedDirectoryIsReadThroughItsIndex) {
  const std::filesystem::path d = dir_ / "sharded";
  std::filesystem::create_directories(d);
  write_one(d / "model-00002-of-00002.safetensors", "lm_head.weight", 20);
  write_one(d / "model-00001-of-00002.safetensors", "model.norm.weight", 10);
  write_one(d / "unrelated.safetensors", "other", 30); // not in the index: not read
  write_text(d / "model.safetensors.index.json",
             R"({"metadata": {"total_size": 8}, "weight_map": {
                   "model.norm.weight": "model-00001-of-00002.safetensors",
                   "lm_head.weight": "model-00002-of-00002.safetensors"}})");
  const Checkpoint c = Checkpoint::open(d);
  ASSERT_EQ(c.files().size(), 2u);
  EXPECT_EQ(c.files()[0]->path().filename(), "model-00001-of-00002.safetensors");
  EXPECT_TRUE(c.has("lm_head.weight"));
  EXPECT_FALSE(c.has("other"));
  EXPECT_EQ(read_bf16(c.files(), "lm_head.weight", {2}), (std::vector<uint16_t>{20, 21}));
  EXPECT_EQ(read_bf16(c.files(), "model.norm.weight", {2}), (std::vector<uint16_t>{10, 11}));
  const std::string shape = invalid([&] { read_bf16(c.files(), "lm_head.weight", {3}); });
  EXPECT_NE(shape.find("tensor 'lm_head.weight': shape [2], the model's is [3]"), std::string::npos)
      << shape;
}

TEST_F(CheckpointTest, ASingleFileOrADirectoryWithModelSafetensors) {
  const std::filesystem::path d = dir_ / "single";
  std::filesystem::create_directories(d);
  write_one(d / "model.safetensors", "model.norm.weight", 5);
  EXPECT_TRUE(Checkpoint::open(d).has("model.norm.weight"));
  const Checkpoint f = Checkpoint::open(d / "model.safetensors");
  ASSERT_EQ(f.files().size(), 1u);
  EXPECT_EQ(read_bf16(f.files(), "model.norm.weight", {2}), (std::vector<uint16_t>{5, 6}));
}

TEST_F(CheckpointTest, MalformedCheckpointsAreNamed) {
  EXPECT_NE(invalid([&] { Checkpoint::open(dir_ / "absent"); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(invalid([&] {
              Checkpoint::open(dir_);
            }).find("has neither model.safetensors.index.json nor model.safetensors"),
            std::string::npos);
  write_text(dir_ / "model.safetensors.index.json", "{not json");
  EXPECT_NE(invalid([&] { Checkpoint::open(dir_); }).find("not valid JSON"), std::string::npos);
  write_text(dir_ / "model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_NE(invalid([&] { Checkpoint::open(dir_); }).find("no 'weight_map' object"),
            std::string::npos);
  write_text(dir_ / "model.safetensors.index.json", R"({"weight_map": {"a": "../a.safetensors"}})");
  EXPECT_NE(invalid([&] {
              Checkpoint::open(dir_);
            }).find("weight_map['a'] is not a file name in its directory"),
            std::string::npos);
  write_text(dir_ / "model.safetensors.index.json", R"({"weight_map": {"a": "gone.safetensors"}})");
  EXPECT_NE(invalid([&] { Checkpoint::open(dir_); }).find("gone.safetensors"), std::string::npos);
}

} // namespace
} // namespace hone::model

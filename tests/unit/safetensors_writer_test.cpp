// safetensors writing (src/model/safetensors_writer): what it writes reads back through
// SafetensorsFile bit for bit, the data starts at a multiple of 8 bytes, and misuse (a tensor
// out of order, of the wrong size, missing at finish, declared twice) is named without leaving a
// file behind.
#include "model/safetensors_writer.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "invalid_message.h"
#include "model/safetensors.h"

namespace hone::model {
namespace {

class SafetensorsWriterTest : public ::testing::Test {
protected:
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() /
                               ("hone_safetensors_writer_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  template <class F> std::string invalid(F call) { return testing::invalid_message(call); }
};

template <class T> std::vector<uint8_t> bytes_of(const std::vector<T> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TEST_F(SafetensorsWriterTest, WhatIsWrittenReadsBackBitForBit) {
  const std::vector<uint16_t> a = {0x3f80, 0xbf80, 0x0001, 0x7f7f, 0x8000, 0x4049};
  const std::vector<int32_t> b = {7, -1, 123456};
  const std::vector<float> c = {0.5f};
  const std::filesystem::path path = dir_ / "t.safetensors";
  {
    SafetensorsWriter w(
        path,
        {{"a", "BF16", {2, 3}}, {"b", "I32", {3}}, {"empty", "BF16", {0, 4}}, {"c", "F32", {}}});
    EXPECT_FALSE(std::filesystem::exists(path)); // only the temporary until finish()
    w.write("a", a.data(), a.size() * 2);
    w.write("b", b.data(), b.size() * 4);
    w.write("empty", nullptr, 0);
    w.write("c", c.data(), 4);
    w.finish();
  }
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b", "c", "empty"}));
  ASSERT_NE(f.find("a"), nullptr);
  EXPECT_EQ(f.find("a")->dtype, "BF16");
  EXPECT_EQ(f.find("a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.find("c")->shape, std::vector<int64_t>{});
  EXPECT_EQ(f.read("a"), bytes_of(a));
  EXPECT_EQ(f.read("b"), bytes_of(b));
  EXPECT_EQ(f.read("c"), bytes_of(c));
  EXPECT_TRUE(f.read("empty").empty());
  EXPECT_EQ(read_bf16({&f}, "a", {2, 3}), a);
  // The header length field is followed by the padded header: data at a multiple of 8.
  std::ifstream in(path, std::ios::binary);
  unsigned char head[8];
  in.read(reinterpret_cast<char *>(head), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | head[i];
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(std::filesystem::file_size(path), 8 + n + 12 + 12 + 4);
}

TEST_F(SafetensorsWriterTest, MisuseIsNamedAndLeavesNoFile) {
  const std::filesystem::path path = dir_ / "bad.safetensors";
  const std::vector<uint16_t> v(6, 0);
  {
    SafetensorsWriter w(path, {{"a", "BF16", {2, 3}}, {"b", "BF16", {1}}});
    EXPECT_NE(invalid([&] {
                w.write("b", v.data(), 2);
              }).find("tensor 'b': written out of order (the next declared is 'a')"),
              std::string::npos);
    EXPECT_NE(invalid([&] {
                w.write("a", v.data(), 10);
              }).find("tensor 'a': 10 bytes, its dtype and shape give 12"),
              std::string::npos);
    w.write("a", v.data(), 12);
    EXPECT_NE(invalid([&] { w.finish(); }).find("tensor 'b' was declared but not written"),
              std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_)); // neither the file nor its temporary
  EXPECT_NE(invalid([&] {
              SafetensorsWriter(path, {{"a", "BF16", {1}}, {"a", "BF16", {1}}});
            }).find("tensor 'a': empty, reserved or declared twice"),
            std::string::npos);
  EXPECT_NE(invalid([&] {
              SafetensorsWriter(path, {{"a", "Q4", {1}}});
            }).find("unknown dtype 'Q4'"),
            std::string::npos);
  EXPECT_NE(invalid([&] {
              SafetensorsWriter(path, {{"a", "BF16", {2, -1}}});
            }).find("negative dimension -1"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

} // namespace
} // namespace hone::model

#include "hone/cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/log.h"
#include "hone/settings.h"

namespace hone {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Metadata current() {
  return Metadata{"0.1.0", "0123456789abcdef", "cpu", "", "6.8.0", "cpu.steady_clock.v1+cold"};
}

CacheEntry entry(const std::string &key, const std::string &tactic = "gemv.f32:rows_per_block=4") {
  CacheEntry e;
  e.key = key;
  e.metadata = current();
  e.tactic = tactic;
  e.default_tactic = "gemv.f32:rows_per_block=1";
  e.median_s = 1.2345678901234567e-5;
  e.default_s = 2.5e-5;
  e.ratio = 0.49382715604938268;
  e.spread = 0.0125;
  e.mode = "cold";
  e.date = "2025-01-02T03:04:05Z";
  return e;
}

void expect_same(const CacheEntry &a, const CacheEntry &b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.metadata, b.metadata);
  EXPECT_EQ(a.tactic, b.tactic);
  EXPECT_EQ(a.default_tactic, b.default_tactic);
  EXPECT_EQ(a.median_s, b.median_s); // exact: JSON numbers round-trip doubles
  EXPECT_EQ(a.default_s, b.default_s);
  EXPECT_EQ(a.ratio, b.ratio);
  EXPECT_EQ(a.spread, b.spread);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.date, b.date);
}

std::string read_bytes(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path &p, const std::string &bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Gives each test an empty directory, captures warnings, and restores the environment.
class CacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hone-cache-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "tuning-cache.json";
    set_log_sink([this](LogLevel level, std::string_view m) {
      if (level == LogLevel::warn)
        warnings_.emplace_back(m);
    });
  }
  void TearDown() override {
    set_log_sink({});
    for (auto &[name, value] : saved_env_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
    fs::remove_all(dir_);
  }
  void set_env(const std::string &name, const std::optional<std::string> &value) {
    bool known = false;
    for (auto &s : saved_env_)
      known = known || s.first == name;
    if (!known) {
      const char *v = std::getenv(name.c_str());
      saved_env_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
    }
    if (value)
      ::setenv(name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  // Files in the test directory whose name starts with `prefix`.
  std::vector<fs::path> files_starting(const std::string &prefix) const {
    std::vector<fs::path> out;
    for (const auto &f : fs::directory_iterator(dir_))
      if (f.path().filename().string().rfind(prefix, 0) == 0)
        out.push_back(f.path());
    return out;
  }

  fs::path dir_;
  fs::path path_;
  std::vector<std::string> warnings_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_env_;
};

// ---- round trip and format --------------------------------------------------------------

TEST_F(CacheTest, RoundTripKeepsEveryField) {
  CacheEntry a = entry("gemv.f32@1|rows=8,n=4096,k=4096|f32|AMD EPYC 7B13");
  a.metadata = Metadata{"0.1.0", "feedbeef", "cuda", "cudart 13000", "580.159", "g+warm"};
  a.mode = "warm";
  CacheEntry b = entry("gemv.f32@1|rows=1,n=4096,k=4096|f32|AMD EPYC 7B13", "gemv.f32");
  b.ratio = 1;
  b.median_s = 3e-300;
  {
    Cache c(path_);
    c.put(a);
    c.put(b);
    c.save();
  }
  Cache c(path_);
  c.load();
  EXPECT_FALSE(c.corrupt());
  ASSERT_EQ(c.entries().size(), 2u);
  ASSERT_NE(c.find_any(a.key), nullptr);
  ASSERT_NE(c.find_any(b.key), nullptr);
  expect_same(*c.find_any(a.key), a);
  expect_same(*c.find_any(b.key), b);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, JsonTextRoundTrips) {
  std::map<std::string, CacheEntry> in{{"k1", entry("k1")}, {"k2", entry("k2", "t2")}};
  const std::map<std::string, CacheEntry> out = cache_from_json(cache_to_json(in));
  ASSERT_EQ(out.size(), 2u);
  expect_same(out.at("k1"), in.at("k1"));
  expect_same(out.at("k2"), in.at("k2"));
}

TEST_F(CacheTest, FileHasTheDocumentedLayout) {
  Cache c(path_);
  c.put(entry("k"));
  c.save();
  const json doc = json::parse(read_bytes(path_));
  EXPECT_EQ(doc.at("schema"), 1);
  ASSERT_TRUE(doc.at("entries").is_array());
  ASSERT_EQ(doc.at("entries").size(), 1u);
  const json &e = doc.at("entries")[0];
  for (const char *name : {"key", "metadata", "tactic", "default_tactic", "median_s", "default_s",
                           "ratio", "spread", "mode", "date"})
    EXPECT_TRUE(e.contains(name)) << name;
  for (const char *name :
       {"hone_version", "kernel_build", "backend", "runtime", "driver", "method"})
    EXPECT_TRUE(e.at("metadata").at(name).is_string()) << name;
  EXPECT_EQ(e.at("tactic"), "gemv.f32:rows_per_block=4");
  EXPECT_EQ(e.at("metadata").at("kernel_build"), "0123456789abcdef");
  // No temporary or partial file is left behind.
  EXPECT_TRUE(files_starting("tuning-cache.json.tmp").empty());
}

TEST_F(CacheTest, MissingFileIsEmptyAndQuiet) {
  Cache c(path_);
  c.load();
  EXPECT_TRUE(c.entries().empty());
  EXPECT_FALSE(c.corrupt());
  EXPECT_TRUE(c.verify(current()).empty());
  EXPECT_TRUE(warnings_.empty());
  EXPECT_FALSE(fs::exists(path_)); // loading creates nothing
}

TEST_F(CacheTest, PutIsVisibleBeforeSaveAndSurvivesLoad) {
  Cache c(path_);
  c.put(entry("k"));
  EXPECT_NE(c.find("k", current()), nullptr);
  c.load(); // nothing on disk yet; the pending entry stays
  EXPECT_NE(c.find("k", current()), nullptr);
}

// ---- staleness and re-tuning ------------------------------------------------------------

// Writes one entry, then edits one metadata field of it in the file.
void doctor_metadata(const fs::path &path, const std::string &key, const char *field,
                     const std::string &value) {
  {
    Cache c(path);
    c.put(entry(key));
    c.save();
  }
  json doc = json::parse(read_bytes(path));
  doc["entries"][0]["metadata"][field] = value;
  write_bytes(path, doc.dump(2));
}

void expect_stale_then_retuned(const fs::path &path, const std::string &key,
                               const std::string &reason) {
  Cache c(path);
  c.load();
  EXPECT_FALSE(c.corrupt());
  EXPECT_EQ(c.find(key, current()), nullptr) << "a stale entry must never be applied";
  ASSERT_NE(c.find_any(key), nullptr);
  const std::vector<VerifyItem> items = c.verify(current());
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, key);
  EXPECT_EQ(items[0].problem, "stale");
  EXPECT_EQ(items[0].reason, reason);

  // Re-tune: a fresh entry measured under the current metadata replaces the stale one.
  c.put(entry(key, "gemv.f32:rows_per_block=8"));
  c.save();
  Cache again(path);
  again.load();
  ASSERT_EQ(again.entries().size(), 1u);
  const CacheEntry *e = again.find(key, current());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->tactic, "gemv.f32:rows_per_block=8");
  EXPECT_TRUE(again.verify(current()).empty());
}

TEST_F(CacheTest, OtherHoneVersionIsStaleAndRetuneReplacesIt) {
  doctor_metadata(path_, "k", "hone_version", "0.0.9");
  expect_stale_then_retuned(path_, "k", "hone_version 0.0.9 != 0.1.0");
}

TEST_F(CacheTest, OtherKernelBuildIsStaleAndRetuneReplacesIt) {
  doctor_metadata(path_, "k", "kernel_build", "ffffffffffffffff");
  expect_stale_then_retuned(path_, "k", "kernel_build ffffffffffffffff != 0123456789abcdef");
}

// ---- corrupt files ------------------------------------------------------------------------

// Loads a corrupt file, then saves a fresh entry; the file must have been reported once,
// ignored, and kept aside byte for byte.
void check_corrupt_file_is_kept(const fs::path &dir, const fs::path &path, const std::string &bytes,
                                const std::vector<std::string> &warnings) {
  write_bytes(path, bytes);
  Cache c(path);
  EXPECT_NO_THROW(c.load());
  EXPECT_TRUE(c.corrupt());
  EXPECT_TRUE(c.entries().empty());
  EXPECT_EQ(warnings.size(), 1u);
  const std::vector<VerifyItem> items = c.verify(current());
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, "");
  EXPECT_EQ(items[0].problem, "corrupt");
  EXPECT_FALSE(items[0].reason.empty());
  EXPECT_EQ(read_bytes(path), bytes) << "loading must not touch a corrupt file";

  c.put(entry("fresh"));
  EXPECT_NO_THROW(c.save());
  EXPECT_EQ(warnings.size(), 1u) << "one warning per corrupt file, not one per look at it";
  EXPECT_FALSE(c.corrupt());

  std::vector<fs::path> kept;
  for (const auto &f : fs::directory_iterator(dir))
    if (f.path().filename().string().find(".corrupt-") != std::string::npos)
      kept.push_back(f.path());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(std::regex_match(kept[0].filename().string(),
                               std::regex(R"(tuning-cache\.json\.corrupt-\d{8}T\d{6}Z)")))
      << kept[0];
  EXPECT_EQ(read_bytes(kept[0]), bytes);

  Cache after(path);
  after.load();
  EXPECT_FALSE(after.corrupt());
  EXPECT_NE(after.find("fresh", current()), nullptr);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(CacheTest, TruncatedFileWarnsOnceAndIsKept) {
  std::map<std::string, CacheEntry> entries{{"a", entry("a")}, {"b", entry("b")}};
  const std::string full = cache_to_json(entries);
  check_corrupt_file_is_kept(dir_, path_, full.substr(0, full.size() / 2), warnings_);
}

TEST_F(CacheTest, GarbageFileWarnsOnceAndIsKept) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i)
    garbage += static_cast<char>((i * 131 + 7) % 256);
  check_corrupt_file_is_kept(dir_, path_, garbage, warnings_);
}

TEST_F(CacheTest, WrongSchemaFileIsKeptNotOverwritten) {
  check_corrupt_file_is_kept(dir_, path_, R"({"schema": 2, "entries": []})", warnings_);
}

TEST_F(CacheTest, SaveWithoutLoadStillKeepsACorruptFile) {
  write_bytes(path_, "{not json");
  Cache c(path_);
  c.put(entry("k"));
  c.save();
  EXPECT_EQ(warnings_.size(), 1u);
  const std::vector<fs::path> kept = files_starting("tuning-cache.json.corrupt-");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(read_bytes(kept[0]), "{not json");
}

TEST_F(CacheTest, TwoCorruptFilesInOneSecondAreBothKept) {
  for (const std::string bytes : {"first garbage", "second garbage"}) {
    write_bytes(path_, bytes);
    Cache c(path_);
    c.load();
    c.put(entry("k"));
    c.save();
  }
  const std::vector<fs::path> kept = files_starting("tuning-cache.json.corrupt-");
  ASSERT_EQ(kept.size(), 2u);
  std::vector<std::string> contents{read_bytes(kept[0]), read_bytes(kept[1])};
  std::sort(contents.begin(), contents.end());
  EXPECT_EQ(contents, (std::vector<std::string>{"first garbage", "second garbage"}));
}

// ---- merging and concurrency ------------------------------------------------------------

TEST_F(CacheTest, SaveMergesWithWhatOthersWrote) {
  Cache mine(path_);
  mine.load(); // empty
  {
    Cache other(path_);
    other.put(entry("theirs"));
    other.put(entry("both", "from-other"));
    other.save();
  }
  mine.put(entry("mine"));
  mine.put(entry("both", "from-mine"));
  mine.save();
  EXPECT_EQ(mine.entries().size(), 3u); // reflects the merged file

  Cache check(path_);
  check.load();
  ASSERT_EQ(check.entries().size(), 3u);
  EXPECT_NE(check.find("theirs", current()), nullptr);
  EXPECT_NE(check.find("mine", current()), nullptr);
  EXPECT_EQ(check.find("both", current())->tactic, "from-mine");
}

TEST_F(CacheTest, SaveDoesNotRewriteOthersEntriesWithAnOldView) {
  {
    Cache first(path_);
    first.put(entry("k", "old"));
    first.save();
  }
  Cache reader(path_);
  reader.load(); // sees "old"
  {
    Cache retuner(path_);
    retuner.put(entry("k", "new"));
    retuner.save();
  }
  reader.put(entry("other"));
  reader.save(); // must not bring back "old": only put() entries override the disk
  Cache check(path_);
  check.load();
  EXPECT_EQ(check.find("k", current())->tactic, "new");
}

// "p<id>-r<round>-i<i>", appended piecewise: `"p" + std::to_string(id)` makes GCC 12 warn
// -Wrestrict (a false positive on the inlined string insert).
std::string writer_key(int id, int round, int i) {
  std::string key(1, 'p');
  key += std::to_string(id);
  key += "-r";
  key += std::to_string(round);
  key += "-i";
  key += std::to_string(i);
  return key;
}

TEST_F(CacheTest, TwoProcessesSavingAtOnceLoseNothing) {
  constexpr int kRounds = 25;
  constexpr int kPerRound = 8;
  auto writer = [&](int id) {
    try {
      Cache c(path_);
      for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kPerRound; ++i)
          c.put(entry(writer_key(id, round, i)));
        c.save();
      }
      return 0;
    } catch (...) {
      return 1;
    }
  };
  std::vector<pid_t> children;
  for (int id = 0; id < 2; ++id) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
      ::_exit(writer(id));
    children.push_back(pid);
  }
  // While they write, a reader must never see a partial file.
  int corrupt_reads = 0;
  while (!children.empty()) {
    Cache r(path_);
    r.load();
    corrupt_reads += r.corrupt() ? 1 : 0;
    for (auto it = children.begin(); it != children.end();) {
      int status = 0;
      const pid_t done = ::waitpid(*it, &status, WNOHANG);
      ASSERT_GE(done, 0);
      if (done == 0) {
        ++it;
        continue;
      }
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
      it = children.erase(it);
    }
  }
  EXPECT_EQ(corrupt_reads, 0);
  EXPECT_TRUE(warnings_.empty());

  Cache c(path_);
  c.load();
  EXPECT_FALSE(c.corrupt());
  EXPECT_EQ(c.entries().size(), static_cast<size_t>(2 * kRounds * kPerRound));
  for (int id = 0; id < 2; ++id)
    for (int round = 0; round < kRounds; ++round)
      for (int i = 0; i < kPerRound; ++i) {
        const std::string key = writer_key(id, round, i);
        EXPECT_NE(c.find(key, current()), nullptr) << key;
      }
  EXPECT_TRUE(files_starting("tuning-cache.json.tmp").empty());
  EXPECT_TRUE(files_starting("tuning-cache.json.corrupt").empty());
}

// ---- clear and errors -------------------------------------------------------------------

TEST_F(CacheTest, ClearRemovesTheFile) {
  Cache c(path_);
  c.put(entry("k"));
  c.save();
  ASSERT_TRUE(fs::exists(path_));
  c.clear();
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(c.find_any("k"), nullptr);
  Cache again(path_);
  again.load();
  EXPECT_TRUE(again.entries().empty());
  EXPECT_NO_THROW(again.clear()); // nothing to remove
}

TEST_F(CacheTest, ClearKeepsACorruptFileAside) {
  write_bytes(path_, "garbage");
  Cache c(path_);
  c.clear();
  EXPECT_FALSE(fs::exists(path_));
  const std::vector<fs::path> kept = files_starting("tuning-cache.json.corrupt-");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(read_bytes(kept[0]), "garbage");
}

TEST_F(CacheTest, SaveIntoAnUnwritableDirectoryThrowsNamingThePath) {
  write_bytes(dir_ / "file", "x"); // a regular file where a directory is needed
  const fs::path bad = dir_ / "file" / "sub" / "tuning-cache.json";
  Cache c(bad);
  c.put(entry("k"));
  try {
    c.save();
    FAIL() << "save() into " << bad << " should throw";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(std::string(e.what()).find((dir_ / "file").string()), std::string::npos) << e.what();
  }
}

// Only a file that was read and failed to parse is corrupt. One that cannot be read (here a
// directory where the file should be, which read() refuses whoever runs the test; permissions
// are tested by the CLI case cache_unreadable_is_an_error) is an error naming the path, and is
// neither moved aside nor replaced.
TEST_F(CacheTest, UnreadableFileIsAnErrorNamingItAndStaysAsItIs) {
  fs::create_directories(path_ / "inside");
  Cache c(path_);
  const auto expect_error = [&](const char *what, const std::function<void()> &call) {
    try {
      call();
      ADD_FAILURE() << what << " accepted an unreadable cache file";
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::runtime) << what;
      EXPECT_NE(std::string(e.what()).find("cannot read tuning cache " + path_.string()),
                std::string::npos)
          << what << ": " << e.what();
    }
  };
  expect_error("load()", [&] { c.load(); });
  EXPECT_FALSE(c.corrupt());
  c.put(entry("k"));
  expect_error("save()", [&] { c.save(); });
  EXPECT_TRUE(c.dirty()); // still recorded for a later save
  expect_error("clear()", [&] { c.clear(); });
  EXPECT_TRUE(fs::is_directory(path_ / "inside"));
  EXPECT_TRUE(files_starting("tuning-cache.json.corrupt").empty());
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, PutRejectsAnEntryWithoutKeyOrWithNonFiniteTimes) {
  Cache c(path_);
  EXPECT_THROW(c.put(entry("")), Error);
  CacheEntry e = entry("k");
  e.ratio = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(c.put(e), Error);
  EXPECT_EQ(c.find_any("k"), nullptr);
}

// ---- location -----------------------------------------------------------------------------

TEST_F(CacheTest, HoneCacheDirWinsOverXdgAndHome) {
  set_env("HONE_CACHE_DIR", "/tmp/hone-dir");
  set_env("XDG_CACHE_HOME", "/tmp/xdg");
  set_env("HOME", "/tmp/home");
  EXPECT_EQ(Cache::default_path(Settings::from_env()), fs::path("/tmp/hone-dir/tuning-cache.json"));
}

TEST_F(CacheTest, XdgCacheHomeIsUsedWithoutHoneCacheDir) {
  set_env("HONE_CACHE_DIR", std::nullopt);
  set_env("XDG_CACHE_HOME", "/tmp/xdg");
  set_env("HOME", "/tmp/home");
  EXPECT_EQ(Cache::default_path(Settings::from_env()), fs::path("/tmp/xdg/hone/tuning-cache.json"));
  set_env("HONE_CACHE_DIR", ""); // empty counts as unset
  EXPECT_EQ(Cache::default_path(Settings::from_env()), fs::path("/tmp/xdg/hone/tuning-cache.json"));
}

TEST_F(CacheTest, HomeIsTheLastResort) {
  set_env("HONE_CACHE_DIR", std::nullopt);
  set_env("XDG_CACHE_HOME", std::nullopt);
  set_env("HOME", "/tmp/home");
  EXPECT_EQ(Cache::default_path(Settings::from_env()), fs::path("/tmp/home/.cache/hone/tuning-cache.json"));
}

TEST_F(CacheTest, DefaultPathIsWhereSaveWrites) {
  set_env("HONE_CACHE_DIR", (dir_ / "nested" / "deeper").string());
  Cache c(Cache::default_path(Settings::from_env()));
  c.put(entry("k"));
  c.save(); // creates the directory
  EXPECT_TRUE(fs::exists(dir_ / "nested" / "deeper" / "tuning-cache.json"));
}

TEST_F(CacheTest, HoneCacheOffDisablesTheCache) {
  set_env("HONE_CACHE", std::nullopt);
  EXPECT_TRUE(Settings::from_env().use_cache);
  set_env("HONE_CACHE", "on");
  EXPECT_TRUE(Settings::from_env().use_cache);
  set_env("HONE_CACHE", "off");
  EXPECT_FALSE(Settings::from_env().use_cache);
}

// ---- parse errors -------------------------------------------------------------------------

// The message of the invalid_argument error cache_from_json throws for `text`.
std::string parse_error(const std::string &text) {
  try {
    cache_from_json(text);
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  ADD_FAILURE() << "cache_from_json accepted: " << text;
  return "";
}

// A valid one-entry document, with `edit` applied.
std::string doc_with(const std::function<void(json &)> &edit) {
  json doc = json::parse(cache_to_json({{"k", entry("k")}}));
  edit(doc);
  return doc.dump();
}

TEST(CacheFromJson, NamesTheBadField) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"{", {"not valid JSON"}},
      {"[]", {"top level", "object"}},
      {R"({"entries": []})", {"missing", "'schema'"}},
      {R"({"schema": "1", "entries": []})", {"'schema'", "integer", "string"}},
      {R"({"schema": 2, "entries": []})", {"schema 2", "not supported", "expected 1"}},
      {R"({"schema": 1})", {"missing", "'entries'"}},
      {R"({"schema": 1, "entries": {}})", {"'entries'", "array"}},
      {R"({"schema": 1, "entries": [3]})", {"entries[0]", "object"}},
      {doc_with([](json &d) { d["entries"][0].erase("tactic"); }),
       {"missing", "'entries[0].tactic'"}},
      {doc_with([](json &d) { d["entries"][0]["median_s"] = "fast"; }),
       {"'entries[0].median_s'", "number", "string"}},
      {doc_with([](json &d) { d["entries"][0]["metadata"].erase("kernel_build"); }),
       {"missing", "'entries[0].metadata.kernel_build'"}},
      {doc_with([](json &d) { d["entries"][0]["metadata"]["driver"] = 580; }),
       {"'entries[0].metadata.driver'", "string", "number"}},
      {doc_with([](json &d) { d["entries"][0]["metadata"] = "x"; }),
       {"'entries[0].metadata'", "object"}},
      {doc_with([](json &d) { d["entries"].push_back(d["entries"][0]); }),
       {"entries[1]", "duplicate key 'k'"}},
  };
  for (const auto &[text, needles] : cases) {
    const std::string message = parse_error(text);
    for (const std::string &needle : needles)
      EXPECT_NE(message.find(needle), std::string::npos)
          << "message \"" << message << "\" should contain \"" << needle << "\"";
  }
}

} // namespace
} // namespace hone

// The decode step's chain tactic as a cache entry: the key's encoding of the step, the PDL
// decision, and reading the pick back from a cache file, stale, foreign and malformed entries
// included.
#include "hone/chain_tactic.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "h200_facts.h"
#include "hone/log.h"
#include "hone/registry.h"
#include "invalid_message.h"

namespace hone::cli {
namespace {

namespace fs = std::filesystem;
using hone::testing::H200Facts;
using hone::testing::invalid_message;

const fs::path kModels = fs::path(__FILE__).parent_path().parent_path().parent_path() / "models";

model::ModelSpec llama() { return model::load_model_spec(kModels / "llama-3.1-8b.json"); }

// The chain_model_id() of Llama-3.1-8B. It is part of every chain key of the model: a change of
// the identity's fields or of its hash loses the cached chain picks (docs/cache-format.md).
constexpr int64_t kLlama8bModelId = 2077950130;

// PDL 4 % faster, bit-identical over 1000 replays.
ChainTiming pdl_wins() {
  return {.off_s = 1.0e-3,
          .on_s = 0.96e-3,
          .off_spread = 0.004,
          .on_spread = 0.005,
          .mismatches = 0,
          .check_replays = kChainCheckReplays,
          .replays_per_sample = 20,
          .variants = {}};
}

TEST(ChainTactic, KeyEncodesBatchBucketFormatAndModel) {
  const model::ModelSpec m = llama();
  EXPECT_EQ(chain_model_id(m), kLlama8bModelId);
  const Shape bucket = chain_bucket(m, 4, 4, 64, 16);
  const std::string text = "batch=4,bits=4,group=64,page_size=16,hidden=4096,layers=32,model=" +
                           std::to_string(kLlama8bModelId);
  EXPECT_EQ(chain_op().buckets().describe(bucket), text);
  const std::string key = cache_key(chain_op(), bucket, "NVIDIA H200");
  EXPECT_EQ(key, "chain.decode_step@2|" + text + "|bf16|NVIDIA H200");

  // The key parses back to the same bucket.
  const std::optional<CacheKeyParts> parts = parse_cache_key(key);
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->op, kChainOpName);
  EXPECT_EQ(parts->version, chain_op().version());
  EXPECT_EQ(parts->device, "NVIDIA H200");
  const std::optional<Shape> parsed = chain_op().buckets().parse(parts->bucket, DType::bf16);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, bucket);
  EXPECT_EQ(chain_op().buckets().map(*parsed), bucket);

  // Batches share the power of two at or above; bf16 weights have group 0 whatever is given.
  EXPECT_EQ(chain_bucket(m, 3, 4, 64, 16), bucket);
  EXPECT_EQ(chain_bucket(m, 9, 16, 64, 16)[0], 16);
  EXPECT_EQ(chain_bucket(m, 1, 16, 64, 16)[2], 0);
  EXPECT_EQ(chain_bucket(m, 32, 8, 128, 64)[0], 32);
  EXPECT_NE(invalid_message([&] { chain_bucket(m, 33, 4, 64, 16); }).find("batch=33"),
            std::string::npos);
  EXPECT_NE(invalid_message([&] { chain_bucket(m, 1, 4, 48, 16); }).find("group=48"),
            std::string::npos);
  EXPECT_NE(invalid_message([&] { chain_bucket(m, 1, 4, 64, 8); }).find("page_size=8"),
            std::string::npos);

  // Every dimension the step's time depends on changes the model id; the rope does not.
  model::ModelSpec other = m;
  other.vocab += 1;
  EXPECT_NE(chain_model_id(other), chain_model_id(m));
  other = m;
  other.qkv_bias = true;
  EXPECT_NE(chain_model_id(other), chain_model_id(m));
  other = m;
  other.rope_theta = 1e4;
  EXPECT_EQ(chain_model_id(other), chain_model_id(m));
  EXPECT_NE(chain_model_id(model::load_model_spec(kModels / "qwen2.5-0.5b.json")),
            chain_model_id(m));
}

TEST(ChainTactic, OpHasFourTacticsAndNoWorkload) {
  const DecodeStepChainOp &op = chain_op();
  const Shape bucket = chain_bucket(llama(), 1, 16, 0, 16);
  EXPECT_EQ(op.default_tactic(bucket).str(), "chain.decode_step:pdl=0");
  EXPECT_EQ(op.candidates(bucket), (std::vector<Tactic>{chain_tactic(false), chain_tactic(true),
                                                        chain_tactic(true, kChainKvPrefetchKib),
                                                        chain_tactic(true, 0, true)}));
  // 2: early=1 joined the candidates, so that a pick made without it is timed again.
  EXPECT_EQ(op.version(), 2);
  EXPECT_EQ(chain_tactic(true, 0, true).str(), "chain.decode_step:pdl=1,early=1");
  EXPECT_EQ(chain_tactic(true, 64, true).str(), "chain.decode_step:pdl=1,kv_prefetch=64,early=1");
  EXPECT_EQ(chain_tactic(false, 0, true), chain_tactic(false)); // no early trigger without PDL
  EXPECT_EQ(op.compile(chain_tactic(true, 0, true)).as<ChainChoice>(),
            (ChainChoice{true, 0, true}));
  EXPECT_EQ(
      op.compile(Tactic::parse("chain.decode_step:pdl=1,kv_prefetch=64,early=1")).as<ChainChoice>(),
      (ChainChoice{true, 64, true}));
  EXPECT_EQ(op.unrunnable_reason(chain_tactic(true, 0, true), bucket), std::nullopt);
  EXPECT_EQ(chain_tactic(true, 256).str(), "chain.decode_step:pdl=1,kv_prefetch=256");
  EXPECT_EQ(chain_tactic(false, 256), chain_tactic(false)); // no prefetch without PDL
  EXPECT_EQ(op.unrunnable_reason(chain_tactic(true), bucket), std::nullopt);
  EXPECT_EQ(op.compile(chain_tactic(true)).as<ChainChoice>(), (ChainChoice{true, 0}));
  EXPECT_EQ(op.compile(chain_tactic(false)).as<ChainChoice>(), (ChainChoice{false, 0}));
  // Any distance in range compiles; only the candidates' are runnable from a cache.
  const Tactic other = Tactic::parse("chain.decode_step:pdl=1,kv_prefetch=64");
  EXPECT_EQ(op.compile(other).as<ChainChoice>(), (ChainChoice{true, 64}));
  EXPECT_NE(op.unrunnable_reason(other, bucket), std::nullopt);
  for (const char *bad :
       {"chain.decode_step:pdl=2", "chain.decode_step", "chain.decode_step:pdl=1,l2=4",
        "chain.decode_step:pdl=0,kv_prefetch=64", "chain.decode_step:pdl=1,kv_prefetch=0",
        "chain.decode_step:pdl=1,kv_prefetch=1048577", "chain.decode_step:kv_prefetch=64,pdl=1",
        "chain.decode_step:pdl=1,kv_prefetch=64,x=1", "chain.decode_step:pdl=0,early=1",
        "chain.decode_step:pdl=1,early=0", "chain.decode_step:pdl=1,early=2",
        "chain.decode_step:pdl=1,early=1,kv_prefetch=64"}) {
    EXPECT_NE(op.unrunnable_reason(Tactic::parse(bad), bucket), std::nullopt) << bad;
    EXPECT_NE(invalid_message([&] { op.compile(Tactic::parse(bad)); }).find(bad), std::string::npos)
        << bad;
  }
  EXPECT_NE(invalid_message([&] { op.prepare(bucket); }).find("hone tune --model"),
            std::string::npos);
  // A CUDA build registers the chain op with the library's ops (so the C API's cache verify
  // judges chain entries too), and chain_op() is that instance.
  if (Registry::global().find("gemv.bf16", "cuda") != nullptr) {
    EXPECT_EQ(Registry::global().find(kChainOpName, "cuda"), &chain_op());
  }
}

TEST(ChainTactic, PdlNeedsBitIdentityAThousandReplaysAndTheMargin) {
  ChainTiming t = pdl_wins();
  EXPECT_TRUE(decide_chain(t).choice.pdl) << decide_chain(t).reason;
  t.on_s = 0.99e-3; // 1 % faster: within the 2 % margin
  EXPECT_FALSE(decide_chain(t).choice.pdl);
  EXPECT_NE(decide_chain(t).reason.find("margin"), std::string::npos);
  t = pdl_wins();
  t.mismatches = 3;
  EXPECT_FALSE(decide_chain(t).choice.pdl);
  EXPECT_NE(decide_chain(t).reason.find("3 words differ"), std::string::npos);
  t = pdl_wins();
  t.check_replays = 999;
  EXPECT_FALSE(decide_chain(t).choice.pdl);
  EXPECT_NE(decide_chain(t).reason.find("needs 1000"), std::string::npos);
  t = pdl_wins();
  t.mismatches = -1; // not checked
  EXPECT_FALSE(decide_chain(t).choice.pdl);

  // As a report: the pick, the ratio and the rejected PDL candidate.
  const Shape bucket = chain_bucket(llama(), 1, 4, 64, 16);
  const TuneReport won = chain_report(bucket, "NVIDIA H200", pdl_wins());
  EXPECT_EQ(won.result.pick(), chain_tactic(true));
  EXPECT_DOUBLE_EQ(won.result.ratio, 0.96);
  EXPECT_EQ(won.key, cache_key(chain_op(), bucket, "NVIDIA H200"));
  t = pdl_wins();
  t.mismatches = 7;
  const TuneReport lost = chain_report(bucket, "NVIDIA H200", t);
  EXPECT_EQ(lost.result.pick(), chain_tactic(false));
  EXPECT_EQ(lost.result.ratio, 1);
  EXPECT_EQ(lost.result.candidates[1].status, Status::gate_failed);
  EXPECT_NE(lost.result.candidates[1].reason.find("7 words differ"), std::string::npos);
}

// The KV prefetch variant: picked only when it beats the choice so far (PDL, or PDL off) by
// the margin, bit-identical over the full check; the fastest of several.
TEST(ChainTactic, KvPrefetchNeedsTheSameChecksAndBeatsTheChoiceSoFar) {
  const auto with = [](double seconds, int kib = kChainKvPrefetchKib, int64_t mismatches = 0) {
    ChainTiming t = pdl_wins(); // PDL 0.96 of PDL off
    t.variants.push_back({{true, kib, false}, seconds, 0.004, mismatches, kChainCheckReplays});
    return t;
  };
  ChainDecision d = decide_chain(with(0.92e-3));
  EXPECT_TRUE(d.choice.pdl);
  EXPECT_EQ(d.choice.kv_prefetch_kib, kChainKvPrefetchKib) << d.reason;
  EXPECT_NE(d.reason.find("kv_prefetch=256"), std::string::npos) << d.reason;
  // 1 % under plain PDL: within the margin, plain PDL stays.
  d = decide_chain(with(0.95e-3));
  EXPECT_TRUE(d.choice.pdl);
  EXPECT_EQ(d.choice.kv_prefetch_kib, 0);
  // Not bit-identical, or not checked enough: never picked, however fast.
  EXPECT_EQ(decide_chain(with(0.5e-3, 256, 2)).choice.kv_prefetch_kib, 0);
  ChainTiming t = with(0.5e-3);
  t.variants[0].check_replays = 10;
  EXPECT_EQ(decide_chain(t).choice.kv_prefetch_kib, 0);
  // Plain PDL rejected (words differ): the prefetch variant is judged against PDL off.
  t = with(0.95e-3);
  t.mismatches = 4;
  d = decide_chain(t);
  EXPECT_TRUE(d.choice.pdl);
  EXPECT_EQ(d.choice.kv_prefetch_kib, kChainKvPrefetchKib);
  // The fastest of two.
  t = with(0.93e-3, 64);
  t.variants.push_back({{true, 512, false}, 0.90e-3, 0.004, 0, kChainCheckReplays});
  EXPECT_EQ(decide_chain(t).choice.kv_prefetch_kib, 512);

  // As a report: three candidates, the prefetch one picked, plain PDL's reason says so.
  const Shape bucket = chain_bucket(llama(), 1, 16, 0, 16);
  const TuneReport r = chain_report(bucket, "NVIDIA H200", with(0.92e-3));
  ASSERT_EQ(r.result.candidates.size(), 3u);
  EXPECT_EQ(r.result.pick(), chain_tactic(true, kChainKvPrefetchKib));
  EXPECT_DOUBLE_EQ(r.result.ratio, 0.92);
  EXPECT_DOUBLE_EQ(r.result.pick_s, 0.92e-3);
  EXPECT_NE(r.result.candidates[1].reason.find("beaten by"), std::string::npos)
      << r.result.candidates[1].reason;
  const TuneReport failed = chain_report(bucket, "NVIDIA H200", with(0.5e-3, 256, 9));
  EXPECT_EQ(failed.result.pick(), chain_tactic(true));
  EXPECT_EQ(failed.result.candidates[2].status, Status::gate_failed);
  EXPECT_NE(failed.result.candidates[2].reason.find("9 words differ"), std::string::npos);
}

// The early-trigger variant is judged as the prefetch one: picked where it beats the choice so
// far by the margin, bit-identical over the full check; the fastest variant of all wins.
TEST(ChainTactic, EarlyTriggerIsJudgedAsTheOtherVariants) {
  const auto with = [](double seconds, int64_t mismatches = 0) {
    ChainTiming t = pdl_wins(); // PDL 0.96 of PDL off
    t.variants.push_back({{true, 0, true}, seconds, 0.004, mismatches, kChainCheckReplays});
    return t;
  };
  ChainDecision d = decide_chain(with(0.92e-3));
  EXPECT_TRUE(d.choice.pdl);
  EXPECT_TRUE(d.choice.early_trigger) << d.reason;
  EXPECT_EQ(d.choice.kv_prefetch_kib, 0);
  EXPECT_NE(d.reason.find("early=1"), std::string::npos) << d.reason;
  EXPECT_EQ(d.choice, (ChainChoice{true, 0, true}));
  // Within the margin of plain PDL, or not bit-identical: plain PDL stays.
  EXPECT_FALSE(decide_chain(with(0.95e-3)).choice.early_trigger);
  EXPECT_FALSE(decide_chain(with(0.5e-3, 1)).choice.early_trigger);
  // Beside a faster prefetch variant: the prefetch one.
  ChainTiming t = with(0.92e-3);
  t.variants.push_back({{true, kChainKvPrefetchKib, false}, 0.90e-3, 0.004, 0, kChainCheckReplays});
  d = decide_chain(t);
  EXPECT_FALSE(d.choice.early_trigger);
  EXPECT_EQ(d.choice.kv_prefetch_kib, kChainKvPrefetchKib);
  // As a report: the early candidate picked and spelled as the op's.
  const Shape bucket = chain_bucket(llama(), 1, 4, 64, 16);
  const TuneReport r = chain_report(bucket, "NVIDIA H200", with(0.92e-3));
  ASSERT_EQ(r.result.candidates.size(), 3u);
  EXPECT_EQ(r.result.pick(), chain_tactic(true, 0, true));
  EXPECT_EQ(r.result.candidates[2].reason, "picked");
}

// Each test gets an empty directory for its cache file; warnings are collected.
class ChainCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::path(::testing::TempDir()) / ("hone-chain-" + test + "-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    path_ = dir_ / "tuning-cache.json";
    set_log_sink([this](LogLevel, std::string_view m) { warnings_.emplace_back(m); });
  }
  void TearDown() override {
    set_log_sink({});
    fs::remove_all(dir_);
  }
  // The entry of `timing` for `bucket`, as `hone tune` records it, written to the file.
  CacheEntry save(const Shape &bucket, const ChainTiming &timing) {
    const CacheEntry e = to_cache_entry(chain_report(bucket, h200_.info().model, timing), warm());
    Cache c(path_);
    c.load();
    c.put(e);
    c.save();
    return e;
  }
  Metadata warm() const { return current_metadata(h200_, /*cold=*/false); }
  ChainLookup find(const Shape &bucket, const std::string &device, const Metadata &metadata) {
    Cache c(path_);
    c.load();
    return find_chain_pick(c, bucket, device, metadata);
  }
  void write(const std::string &text) { std::ofstream(path_) << text; }

  H200Facts h200_;
  fs::path dir_, path_;
  std::vector<std::string> warnings_;
  const Shape bucket_ = chain_bucket(llama(), 4, 4, 64, 16);
};

TEST_F(ChainCacheTest, APickReadsBackFromTheFile) {
  const CacheEntry saved = save(bucket_, pdl_wins());
  EXPECT_EQ(saved.tactic, "chain.decode_step:pdl=1");
  EXPECT_EQ(saved.default_tactic, "chain.decode_step:pdl=0");
  EXPECT_EQ(saved.mode, "warm");
  EXPECT_DOUBLE_EQ(saved.median_s, 0.96e-3);
  EXPECT_DOUBLE_EQ(saved.default_s, 1.0e-3);

  const ChainLookup found = find(bucket_, "NVIDIA H200", warm());
  ASSERT_TRUE(found.usable()) << found.reason;
  EXPECT_TRUE(found.choice.pdl);
  EXPECT_EQ(found.choice.kv_prefetch_kib, 0);
  EXPECT_EQ(found.key, saved.key);
  ASSERT_TRUE(found.entry.has_value());
  EXPECT_EQ(found.entry->date, saved.date);

  // Another batch bucket of the same model has no entry.
  const ChainLookup other = find(chain_bucket(llama(), 1, 4, 64, 16), "NVIDIA H200", warm());
  EXPECT_EQ(other.status, Lookup::absent);
  EXPECT_TRUE(other.reason.empty()) << other.reason;
}

TEST_F(ChainCacheTest, AKvPrefetchPickReadsBackWithItsDistance) {
  ChainTiming t = pdl_wins();
  t.variants.push_back({{true, kChainKvPrefetchKib, false}, 0.9e-3, 0.004, 0, kChainCheckReplays});
  const CacheEntry saved = save(bucket_, t);
  EXPECT_EQ(saved.tactic, "chain.decode_step:pdl=1,kv_prefetch=256");
  EXPECT_DOUBLE_EQ(saved.median_s, 0.9e-3);
  const ChainLookup found = find(bucket_, "NVIDIA H200", warm());
  ASSERT_TRUE(found.usable()) << found.reason;
  EXPECT_TRUE(found.choice.pdl);
  EXPECT_EQ(found.choice.kv_prefetch_kib, kChainKvPrefetchKib);
}

TEST_F(ChainCacheTest, AnEarlyTriggerPickReadsBack) {
  ChainTiming t = pdl_wins();
  t.variants.push_back({{true, 0, true}, 0.9e-3, 0.004, 0, kChainCheckReplays});
  const CacheEntry saved = save(bucket_, t);
  EXPECT_EQ(saved.tactic, "chain.decode_step:pdl=1,early=1");
  const ChainLookup found = find(bucket_, "NVIDIA H200", warm());
  ASSERT_TRUE(found.usable()) << found.reason;
  EXPECT_TRUE(found.choice.pdl);
  EXPECT_TRUE(found.choice.early_trigger);
  EXPECT_EQ(found.choice.kv_prefetch_kib, 0);
}

TEST_F(ChainCacheTest, AnEntryOfOtherMetadataOrAnotherDeviceIsNotUsed) {
  save(bucket_, pdl_wins());
  Metadata newer_driver = warm();
  newer_driver.driver = "590.1";
  const ChainLookup stale = find(bucket_, "NVIDIA H200", newer_driver);
  EXPECT_EQ(stale.status, Lookup::stale);
  EXPECT_NE(stale.reason.find("driver"), std::string::npos) << stale.reason;
  // Cold metadata (an op tune's) does not match a chain entry's warm one.
  EXPECT_EQ(find(bucket_, "NVIDIA H200", current_metadata(h200_, true)).status, Lookup::stale);

  const ChainLookup elsewhere = find(bucket_, "NVIDIA A100", warm());
  EXPECT_EQ(elsewhere.status, Lookup::absent);
  EXPECT_NE(elsewhere.reason.find("measured on NVIDIA H200"), std::string::npos)
      << elsewhere.reason;
}

TEST_F(ChainCacheTest, MalformedEntriesNeverCrash) {
  const CacheEntry saved = save(bucket_, pdl_wins());
  // Tactics this build cannot run: the entry is unrunnable, not applied.
  for (const char *tactic : {"chain.decode_step:pdl=2", "garbage!!", "gemv.f32:rows_per_block=4",
                             "chain.decode_step", ""}) {
    CacheEntry bad = saved;
    bad.tactic = tactic;
    Cache c(path_);
    c.load();
    c.put(bad);
    c.save();
    const ChainLookup found = find(bucket_, "NVIDIA H200", warm());
    EXPECT_EQ(found.status, Lookup::unrunnable) << tactic;
    EXPECT_FALSE(found.reason.empty()) << tactic;
  }

  // Keys of the op that are not of this bucket's form, or of another op version, are passed
  // over; an older version is named.
  CacheEntry odd = saved;
  const std::string bucket_text = chain_op().buckets().describe(bucket_);
  fs::remove(path_);
  Cache c(path_);
  for (const std::string &key :
       {std::string("chain.decode_step@1|batch=abc|bf16|NVIDIA H200"),
        std::string("chain.decode_step|||"),
        std::string("chain.decode_step@0|") + bucket_text + "|bf16|NVIDIA H200"}) {
    odd.key = key;
    c.put(odd);
  }
  c.save();
  const ChainLookup found = find(bucket_, "NVIDIA H200", warm());
  EXPECT_EQ(found.status, Lookup::absent);
  EXPECT_NE(found.reason.find("version 0"), std::string::npos) << found.reason;

  // A damaged file (a chain entry without its tactic) warns once and reads as empty.
  std::string text = cache_to_json({{saved.key, saved}});
  const size_t at = text.find("\"tactic\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 8, "\"tactik\"");
  write(text);
  const ChainLookup damaged = find(bucket_, "NVIDIA H200", warm());
  EXPECT_EQ(damaged.status, Lookup::absent);
  EXPECT_EQ(warnings_.size(), 1u);
  write("{ not json");
  EXPECT_EQ(find(bucket_, "NVIDIA H200", warm()).status, Lookup::absent);
}

// `hone step`'s look-up: the cache the settings name, under the backend's warm metadata; an
// unusable entry is named in one warning on stderr.
TEST_F(ChainCacheTest, TheStepReadsThePickOfItsSettingsCache) {
  Settings settings;
  settings.cache_dir = dir_.string();
  const model::ModelSpec m = llama();
  EXPECT_EQ(cached_chain_pick(m, 4, 4, 64, 16, h200_, settings).status, Lookup::absent);
  save(bucket_, pdl_wins());
  const ChainLookup found = cached_chain_pick(m, 3, 4, 64, 16, h200_, settings); // batch 3 -> 4
  ASSERT_TRUE(found.usable()) << found.reason;
  EXPECT_TRUE(found.choice.pdl);

  CacheEntry stale = *found.entry;
  stale.metadata.kernel_build = "feedfacefeedface";
  Cache c(path_);
  c.load();
  c.put(stale);
  c.save();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cached_chain_pick(m, 4, 4, 64, 16, h200_, settings).status, Lookup::stale);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("hone: warning: chain entry " + found.key + " is stale"), std::string::npos)
      << err;

  settings.use_cache = false;
  EXPECT_EQ(cached_chain_pick(m, 4, 4, 64, 16, h200_, settings).status, Lookup::absent);
  settings.use_cache = true;
  // A batch outside the chain's buckets has no pick.
  EXPECT_EQ(cached_chain_pick(m, 64, 4, 64, 16, h200_, settings).status, Lookup::absent);
}

} // namespace
} // namespace hone::cli

// gemv.bf16's vendor tactics (cuBLASLt), host logic, no device: the tactic spelling and its
// round trip (the heuristic tactic's too), errors naming the bad field and value, candidates in
// tolerance mode only (with a supplied heuristic in place of cuBLASLt's), compile() and the entry
// point's config type, a cached algorithm the heuristic no longer lists judged unrunnable like a
// stale entry, and the best of hone's own kernels beside a vendor pick.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/ops/gemv_bf16_vendor.h"
#include "hone/error.h"
#include "hone/tune.h"
#include "hone/tuning_store.h"

namespace hone::cuda {
namespace {

CublasLtAlgoId algo(int64_t id, int64_t tile, int64_t split_k = 1) {
  CublasLtAlgoId a;
  a.algo = id;
  a.tile = tile;
  a.stages = 8;
  a.split_k = split_k;
  a.reduction = split_k > 1 ? 2 : 0;
  a.swizzle = 1;
  a.custom = 0;
  a.inner_shape = 3;
  a.cluster_shape = 2;
  return a;
}

// What the supplied heuristic answers for every shape.
const std::vector<CublasLtAlgoId> kListed = {algo(66, 20), algo(66, 21, 4), algo(31, 15)};

GemvBf16Op op_with_listed() {
  return GemvBf16Op([](int, int, int) { return kListed; });
}

Shape bucket_of(int rows, int n, int k) { return Shape{{rows, n, k}, DType::bf16}; }

bool is_vendor(const Tactic &t) { return is_gemv_bf16_vendor(t); }

// from_tactic(text) must throw Error(invalid_argument) whose message holds `needle`.
void expect_refused(const std::string &text, const std::string &needle) {
  try {
    GemvBf16VendorConfig::from_tactic(Tactic::parse(text));
    ADD_FAILURE() << text << " was accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << text;
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << text << ": " << e.what() << " lacks " << needle;
  }
}

TEST(GemvBf16VendorTest, TacticSpellingRoundTrips) {
  const GemvBf16VendorConfig c{algo(66, 21, 4)};
  const Tactic t = c.to_tactic();
  EXPECT_EQ(t.str(), "gemv.bf16.cublaslt:algo=66,tile=21,stages=8,split_k=4,reduction=2,"
                     "swizzle=1,custom=0,inner_shape=3,cluster_shape=2");
  EXPECT_TRUE(is_gemv_bf16_vendor(t));
  EXPECT_EQ(GemvBf16VendorConfig::from_tactic(Tactic::parse(t.str())), c);
  EXPECT_EQ(c.algo.str(), "algo=66,tile=21,stages=8,split_k=4,reduction=2,swizzle=1,custom=0,"
                          "inner_shape=3,cluster_shape=2");
  // The largest value of each attribute's type survives.
  GemvBf16VendorConfig big;
  big.algo = {2147483647, 4294967295, 4294967295, 2147483647, 4294967295,
              4294967295, 4294967295, 65535,      65535};
  EXPECT_EQ(GemvBf16VendorConfig::from_tactic(Tactic::parse(big.to_tactic().str())), big);

  // The heuristic tactic names no algorithm.
  const GemvBf16VendorConfig h = gemv_bf16_vendor_heuristic();
  EXPECT_TRUE(h.heuristic);
  EXPECT_EQ(h.to_tactic().str(), "gemv.bf16.cublaslt:heuristic=1");
  EXPECT_TRUE(is_gemv_bf16_vendor(h.to_tactic()));
  EXPECT_EQ(GemvBf16VendorConfig::from_tactic(Tactic::parse("gemv.bf16.cublaslt:heuristic=1")), h);
  EXPECT_FALSE(GemvBf16VendorConfig::from_tactic(t).heuristic);
  EXPECT_FALSE(h == c);
}

// The heuristic tactic runs the heuristic's first algorithm for the shape it is given; a
// named one runs its own whatever the shape.
TEST(GemvBf16VendorTest, TheHeuristicTacticResolvesPerShape) {
  const GemvBf16VendorConfig named{kListed[2]};
  std::string why;
  EXPECT_EQ(gemv_bf16_vendor_algo_for(named, 24, 4096, 4096, &why), kListed[2]);
  EXPECT_EQ(why, "");
  // The heuristic's answer where cuBLASLt gives one (a device), else none, with the reason.
  const std::vector<CublasLtAlgoId> listed = gemv_bf16_vendor_algos(24, 4096, 4096);
  const std::optional<CublasLtAlgoId> h =
      gemv_bf16_vendor_algo_for(gemv_bf16_vendor_heuristic(), 24, 4096, 4096, &why);
  if (listed.empty()) {
    EXPECT_EQ(h, std::nullopt);
    EXPECT_NE(why.find("lists no algorithm for rows=24,n=4096,k=4096"), std::string::npos) << why;
  } else {
    EXPECT_EQ(h, listed.front());
  }
}

TEST(GemvBf16VendorTest, BadTacticsNameTheFieldAndValue) {
  const std::string fields =
      "tile=21,stages=8,split_k=1,reduction=0,swizzle=0,custom=0,inner_shape=0,cluster_shape=0";
  expect_refused("gemv.bf16.mma:algo=66," + fields, "not a gemv.bf16.cublaslt tactic");
  expect_refused("gemv.bf16.cublaslt:algo=66", "takes the fields algo,tile,stages");
  expect_refused("gemv.bf16.cublaslt:heuristic=2", "heuristic=2");
  expect_refused("gemv.bf16.cublaslt:heuristic=0", "heuristic=0");
  expect_refused("gemv.bf16.cublaslt:heuristic=1,algo=66", "or heuristic=1 alone");
  expect_refused("gemv.bf16.cublaslt:algo=66," + fields + ",extra=1", "takes the fields");
  expect_refused("gemv.bf16.cublaslt:tile=21,algo=66,stages=8,split_k=1,reduction=0,swizzle=0,"
                 "custom=0,inner_shape=0,cluster_shape=0",
                 "field 1 is 'tile', expected 'algo'");
  expect_refused("gemv.bf16.cublaslt:algo=-1," + fields, "algo=-1 outside 0..2147483647");
  expect_refused("gemv.bf16.cublaslt:algo=66,tile=21,stages=8,split_k=1,reduction=0,swizzle=0,"
                 "custom=0,inner_shape=65536,cluster_shape=0",
                 "inner_shape=65536 outside 0..65535");
  expect_refused("gemv.bf16.cublaslt:algo=66,tile=4294967296,stages=8,split_k=1,reduction=0,"
                 "swizzle=0,custom=0,inner_shape=0,cluster_shape=0",
                 "tile=4294967296");
}

TEST(GemvBf16VendorTest, VendorCandidatesOnlyInToleranceMode) {
  const GemvBf16Op op = op_with_listed();
  const Shape bucket = bucket_of(16, 4096, 4096);
  const std::vector<Tactic> invariant = op.tune_candidates(bucket, Numerics::batch_invariant);
  const std::vector<Tactic> tolerance = op.tune_candidates(bucket, Numerics::tolerance);
  ASSERT_FALSE(invariant.empty());
  EXPECT_EQ(invariant.front(), op.default_tactic(bucket));
  EXPECT_EQ(std::count_if(invariant.begin(), invariant.end(), is_vendor), 0);

  // Tolerance: hone's kernels as in batch-invariant mode, then the heuristic tactic in place of
  // the first listed algorithm, then one tactic per other listed algorithm, in the heuristic's
  // order.
  ASSERT_EQ(tolerance.size(), invariant.size() + kListed.size());
  EXPECT_TRUE(std::equal(invariant.begin(), invariant.end(), tolerance.begin()));
  EXPECT_EQ(tolerance[invariant.size()], gemv_bf16_vendor_heuristic().to_tactic());
  for (size_t i = 1; i < kListed.size(); ++i) {
    const Tactic &t = tolerance[invariant.size() + i];
    EXPECT_TRUE(op.is_vendor_tactic(t)) << t.str();
    EXPECT_EQ(GemvBf16VendorConfig::from_tactic(t).algo, kListed[i]) << t.str();
  }
  EXPECT_EQ(
      std::count(tolerance.begin(), tolerance.end(), GemvBf16VendorConfig{kListed[0]}.to_tactic()),
      0);
  // candidates() is every tactic a tune of either mode could pick.
  EXPECT_EQ(op.candidates(bucket), tolerance);
  for (const Tactic &t : invariant)
    EXPECT_FALSE(op.is_vendor_tactic(t)) << t.str();
}

TEST(GemvBf16VendorTest, NoVendorCandidatesWhenTheHeuristicHasNone) {
  const GemvBf16Op op([](int, int, int) { return std::vector<CublasLtAlgoId>{}; });
  const Shape bucket = bucket_of(8, 4096, 4096);
  EXPECT_EQ(op.tune_candidates(bucket, Numerics::tolerance),
            op.tune_candidates(bucket, Numerics::batch_invariant));
}

TEST(GemvBf16VendorTest, HeuristicIsAskedForTheBucket) {
  std::vector<std::vector<int>> asked;
  const GemvBf16Op op([&](int rows, int n, int k) {
    asked.push_back({rows, n, k});
    return kListed;
  });
  (void)op.tune_candidates(bucket_of(32, 1536, 8960), Numerics::tolerance);
  (void)op.tune_candidates(bucket_of(32, 1536, 8960), Numerics::batch_invariant);
  ASSERT_EQ(asked.size(), 1u) << "a batch-invariant tune asks cuBLASLt nothing";
  EXPECT_EQ(asked[0], (std::vector<int>{32, 1536, 8960}));
}

TEST(GemvBf16VendorTest, CompileGivesTheEntryPointAVendorConfig) {
  const GemvBf16Op op = op_with_listed();
  const Tactic t = GemvBf16VendorConfig{kListed[1]}.to_tactic();
  const CompiledTactic c = op.compile(t);
  ASSERT_NE(c.get_if<GemvBf16VendorConfig>(), nullptr);
  EXPECT_EQ(c.get_if<GemvBf16VendorConfig>()->algo, kListed[1]);
  EXPECT_EQ(c.get_if<GemvBf16Config>(), nullptr);
  EXPECT_THROW(c.as<GemvBf16Config>(), Error);

  const Shape bucket = bucket_of(4, 4096, 4096);
  const CompiledTactic own = op.compile(op.default_tactic(bucket));
  EXPECT_NE(own.get_if<GemvBf16Config>(), nullptr);
  EXPECT_EQ(own.get_if<GemvBf16VendorConfig>(), nullptr);

  const CompiledTactic h = op.compile(gemv_bf16_vendor_heuristic().to_tactic());
  ASSERT_NE(h.get_if<GemvBf16VendorConfig>(), nullptr);
  EXPECT_TRUE(h.get_if<GemvBf16VendorConfig>()->heuristic);

  try {
    op.compile(Tactic::parse("gemv.bf16.cublaslt:algo=66"));
    ADD_FAILURE() << "a malformed vendor tactic compiled";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
}

// A cached vendor pick is usable while the heuristic lists its algorithm; once it does not
// (the cache read back under another cuBLASLt), the entry is unrunnable: ignored with a
// warning and re-tuned, never launched.
TEST(GemvBf16VendorTest, AnAlgorithmTheHeuristicNoLongerListsIsUnrunnable) {
  const GemvBf16Op op = op_with_listed();
  const Shape bucket = bucket_of(8, 4096, 4096);
  const Tactic listed = GemvBf16VendorConfig{kListed[2]}.to_tactic();
  const Tactic gone = GemvBf16VendorConfig{algo(99, 7)}.to_tactic();
  EXPECT_EQ(op.unrunnable_reason(listed, bucket), std::nullopt);
  EXPECT_EQ(op.unrunnable_reason(gemv_bf16_vendor_heuristic().to_tactic(), bucket), std::nullopt);
  const std::optional<std::string> why = op.unrunnable_reason(gone, bucket);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("not one of this build's candidates"), std::string::npos) << *why;
  EXPECT_NE(why->find("algo=99"), std::string::npos) << *why;

  Metadata now;
  now.hone_version = "0.1.0";
  now.kernel_build = "k";
  now.backend = "cuda";
  now.runtime = "cudart 13000";
  now.driver = "580";
  now.method = "graph+cold";
  CacheEntry entry;
  entry.key = "gemv.bf16@2|rows=8,n=4096,k=4096|bf16|NVIDIA H200";
  entry.metadata = now;
  entry.tactic = listed.str();
  Tactic parsed;
  EXPECT_EQ(entry_problem(entry, op, bucket, now, &parsed), std::nullopt);
  EXPECT_EQ(parsed, listed);
  entry.tactic = gone.str();
  const std::optional<VerifyItem> problem = entry_problem(entry, op, bucket, now);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->problem, "unrunnable");
  entry.tactic = "gemv.bf16.cublaslt:algo=66,tile=-3";
  ASSERT_TRUE(entry_problem(entry, op, bucket, now).has_value());
  EXPECT_EQ(entry_problem(entry, op, bucket, now)->problem, "unrunnable");
}

TEST(GemvBf16VendorTest, BestOwnIsNamedApartFromAVendorPick) {
  const GemvBf16Op op = op_with_listed();
  const Shape bucket = bucket_of(16, 4096, 4096);
  const std::vector<Tactic> own = op.tune_candidates(bucket, Numerics::batch_invariant);
  ASSERT_GE(own.size(), 2u);
  TuneResult r;
  const auto add = [&](const Tactic &t, Status status, double median_s) {
    CandidateReport c;
    c.tactic = t;
    c.status = status;
    c.median_s = median_s;
    r.candidates.push_back(c);
  };
  add(own[0], Status::ok, 10e-6);                                     // default
  add(own[1], Status::ok, 8e-6);                                      // own best
  add(GemvBf16VendorConfig{kListed[0]}.to_tactic(), Status::ok, 6e-6); // vendor pick
  add(GemvBf16VendorConfig{kListed[1]}.to_tactic(), Status::ok, 7e-6);
  r.default_index = 0;
  r.pick_index = 2;
  EXPECT_EQ(best_own_index(op, r), std::optional<size_t>(1));
  // A faster own kernel that failed the gate is not hone's best.
  r.candidates[1].status = Status::gate_failed;
  EXPECT_EQ(best_own_index(op, r), std::optional<size_t>(0));
  // An own pick is its own best.
  r.pick_index = 0;
  EXPECT_EQ(best_own_index(op, r), std::optional<size_t>(0));
}

} // namespace
} // namespace hone::cuda

#include "hone/key.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hone/backend.h"
#include "hone/bucket.h"
#include "hone/build_info.h"
#include "hone/op.h"

namespace hone {
namespace {

// A backend that only states fixed device facts.
class FixedBackend : public Backend {
public:
  FixedBackend() {
    info_.backend = "cuda";
    info_.model = "NVIDIA H200";
    info_.runtime_version = "cudart 13000";
    info_.driver_version = "580.159";
  }
  const DeviceInfo &info() const override { return info_; }
  Timer &timer() override { std::abort(); }
  void sync() override {}
  void flush_llc() override {}
  std::string method_id() const override { return "cuda.graph.v1"; }
  std::string kernel_build_id() const override { return "0123456789abcdef"; }

private:
  DeviceInfo info_;
};

// An op that only has a name, a version and buckets.
class NamedOp : public TunableOp {
public:
  NamedOp(std::string name, int version)
      : name_(std::move(name)),
        version_(version), buckets_{{DimSpec::exact_then_pow2("rows", 1, 32, 8),
                                     DimSpec::pow2("n", 1, 1 << 20),
                                     DimSpec::pow2("k", 1, 1 << 20)}} {}
  std::string_view name() const override { return name_; }
  int version() const override { return version_; }
  std::string_view backend() const override { return "cpu"; }
  DType dtype() const override { return DType::f32; }
  const BucketSpec &buckets() const override { return buckets_; }
  std::vector<Tactic> candidates(const Shape &bucket) const override {
    return {default_tactic(bucket)};
  }
  Tactic default_tactic(const Shape &) const override { return Tactic{name_, {}}; }
  void validate(const Shape &) const override {}
  std::unique_ptr<Workload> prepare(const Shape &) const override { return nullptr; }

private:
  std::string name_;
  int version_;
  BucketSpec buckets_;
};

TEST(Key, ProblemKeyIsNameDimsDtype) {
  NamedOp op("gemv.f32", 3);
  EXPECT_EQ(problem_key(op, Shape{{8, 4096, 4096}, DType::f32}),
            "gemv.f32|rows=8,n=4096,k=4096|f32");
  EXPECT_EQ(problem_key(op, Shape{{1, 128, 256}, DType::bf16}), "gemv.f32|rows=1,n=128,k=256|bf16");
}

TEST(Key, CacheKeyAddsVersionAndDeviceModel) {
  NamedOp op("gemv.f32", 3);
  const Shape bucket{{8, 4096, 4096}, DType::f32};
  EXPECT_EQ(cache_key(op, bucket, "AMD EPYC 7B13"),
            "gemv.f32@3|rows=8,n=4096,k=4096|f32|AMD EPYC 7B13");
}

TEST(Key, EveryPartOfTheIdentityChangesTheCacheKey) {
  const Shape bucket{{8, 4096, 4096}, DType::f32};
  const std::string base = cache_key(NamedOp("gemv.f32", 1), bucket, "H200");
  EXPECT_NE(cache_key(NamedOp("gemv.f32", 2), bucket, "H200"), base);   // op version
  EXPECT_NE(cache_key(NamedOp("qmv.affine", 1), bucket, "H200"), base); // op name
  EXPECT_NE(cache_key(NamedOp("gemv.f32", 1), bucket, "H100"), base);   // device
  EXPECT_NE(cache_key(NamedOp("gemv.f32", 1), Shape{{8, 4096, 4096}, DType::bf16}, "H200"),
            base); // dtype
  EXPECT_NE(cache_key(NamedOp("gemv.f32", 1), Shape{{4, 4096, 4096}, DType::f32}, "H200"),
            base); // dims
}

TEST(Key, CurrentMetadataComesFromTheBuildAndTheBackend) {
  FixedBackend backend;
  const Metadata cold = current_metadata(backend);
  EXPECT_EQ(cold.hone_version, HONE_VERSION_STRING);
  EXPECT_EQ(cold.kernel_build, "0123456789abcdef");
  EXPECT_EQ(cold.backend, "cuda");
  EXPECT_EQ(cold.runtime, "cudart 13000");
  EXPECT_EQ(cold.driver, "580.159");
  EXPECT_EQ(cold.method, "cuda.graph.v1+cold");
  EXPECT_EQ(current_metadata(backend, /*cold=*/false).method, "cuda.graph.v1+warm");
}

TEST(Key, StaleReasonIsEmptyWhenEverythingMatches) {
  FixedBackend backend;
  const Metadata m = current_metadata(backend);
  EXPECT_EQ(stale_reason(m, m), std::nullopt);
}

TEST(Key, StaleReasonNamesEachFieldWithBothValues) {
  const Metadata current{"0.1.0", "abc", "cuda", "cudart 13000", "580.159", "cuda.graph.v1+cold"};
  struct Case {
    std::string Metadata::*field;
    std::string value;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {&Metadata::hone_version, "0.0.9", "hone_version 0.0.9 != 0.1.0"},
      {&Metadata::kernel_build, "def", "kernel_build def != abc"},
      {&Metadata::backend, "cpu", "backend cpu != cuda"},
      {&Metadata::runtime, "cudart 12080", "runtime cudart 12080 != cudart 13000"},
      {&Metadata::driver, "570.1", "driver 570.1 != 580.159"},
      {&Metadata::method, "cuda.graph.v1+warm", "method cuda.graph.v1+warm != cuda.graph.v1+cold"},
      {&Metadata::runtime, "", "runtime \"\" != cudart 13000"},
  };
  for (const Case &c : cases) {
    Metadata entry = current;
    entry.*(c.field) = c.value;
    EXPECT_EQ(stale_reason(entry, current), c.reason);
  }
}

TEST(Key, StaleReasonNamesTheFirstDifferingField) {
  const Metadata current{"0.1.0", "abc", "cuda", "cudart 13000", "580.159", "m+cold"};
  Metadata entry = current;
  entry.driver = "1";
  entry.kernel_build = "zzz";
  EXPECT_EQ(stale_reason(entry, current), "kernel_build zzz != abc");
}

} // namespace
} // namespace hone

// The tuning store's rules on the CUDA backend: a tactic that parses but names a config this
// build did not compile, or garbage, is refused by compile() (host logic, also run without a
// device), is unrunnable for the TuningStore and the cache audit, and is skipped by the
// dispatcher, so the public entry point runs the default instead of failing at launch; a shape
// too large for the device's memory is refused before anything is allocated, naming the bytes
// it needs and the bytes the device has.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "device_test.h"
#include "hone/cache.h"
#include "hone/cache_audit.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/log.h"
#include "hone/ops/cuda.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/tuning_store.h"
#include "op_test_helpers.h"

namespace hone::cuda::testing {
namespace {

namespace fs = std::filesystem;

// A gemv.bf16 tactic of valid spelling whose config is not compiled in: no CTA shape has 3
// warps.
Tactic uncompiled_gemv() {
  GemvBf16Config c = gemv_bf16_configs().front();
  c.warps = 3;
  return c.to_tactic();
}

Tactic uncompiled_qmv() {
  QmvAffineConfig c = qmv_affine_configs(4).front();
  c.warps = 3;
  return c.to_tactic();
}

// compile(), and so the dispatcher, an override and the cache check, refuses a config that
// would fail at launch with cudaErrorInvalidValue. Host logic only: runs without a device.
TEST(CudaCompiledTactics, ConfigsNotCompiledInAreRefusedNamingTheTactic) {
  const struct {
    const char *op;
    Tactic tactic;
    Shape bucket;
  } cases[] = {
      {"gemv.bf16", uncompiled_gemv(), Shape{{4, 4096, 4096}, DType::bf16}},
      {"qmv.affine", uncompiled_qmv(), Shape{{4, 4096, 4096, 4, 64}, DType::bf16}},
  };
  for (const auto &c : cases) {
    const TunableOp &op = registered_op(c.op);
    try {
      op.compile(c.tactic);
      ADD_FAILURE() << c.op << " compiled " << c.tactic.str();
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("not a config compiled"), std::string::npos)
          << e.what();
    }
    EXPECT_NO_THROW(op.compile(op.default_tactic(c.bucket))) << c.op;
    const std::optional<std::string> why = op.unrunnable_reason(c.tactic, c.bucket);
    ASSERT_TRUE(why.has_value()) << c.op;
    EXPECT_NE(why->find(c.tactic.str()), std::string::npos) << *why;
    EXPECT_EQ(op.unrunnable_reason(op.default_tactic(c.bucket), c.bucket), std::nullopt);

    // The same tactic as an override is an error naming the variable.
    Settings s;
    const std::string var = tactic_env_name("cuda", c.op);
    s.tactics[var] = c.tactic.str();
    try {
      op.env_override(c.bucket, s);
      ADD_FAILURE() << var << "=" << c.tactic.str() << " was accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
    }
  }
}

class CudaTuningStoreTest : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    dir_ = fs::temp_directory_path() /
           ("hone-cuda-store-" + std::to_string(::getpid()) + "-" +
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
    if (!dir_.empty())
      fs::remove_all(dir_);
  }

  // Records `tactic` as the cached pick of `bucket`, with this machine's metadata.
  void plant(const TunableOp &op, const Shape &bucket, const std::string &tactic) {
    Backend &be = cuda_backend();
    Cache cache(path_);
    cache.load();
    CacheEntry e;
    e.key = cache_key(op, bucket, be.info().model);
    e.metadata = current_metadata(be, /*cold=*/true);
    e.tactic = tactic;
    e.default_tactic = op.default_tactic(bucket).str();
    e.median_s = e.default_s = 1e-5;
    e.mode = "cold";
    e.date = "2026-12-01T00:00:00Z";
    cache.put(e);
    cache.save();
  }

  fs::path dir_, path_;
  std::vector<std::string> warnings_;
};

TEST_F(CudaTuningStoreTest, UnrunnableEntriesAreFoundAsSuchAndAudited) {
  const TunableOp &op = registered_op("gemv.bf16");
  const Shape bucket{{4, 1024, 2048}, DType::bf16};
  for (const std::string &tactic :
       {uncompiled_gemv().str(), std::string("%% not a tactic"),
        std::string("qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=16,split_k=1")}) {
    plant(op, bucket, tactic);
    const CacheLookup found = TuningStore(cuda_backend(), path_).find(op, bucket);
    EXPECT_EQ(found.status, Lookup::unrunnable) << tactic;
    Cache cache(path_);
    cache.load();
    const std::vector<VerifyItem> problems = audit_cache(cache).problems();
    ASSERT_EQ(problems.size(), 1u) << tactic;
    EXPECT_EQ(problems[0].problem, "unrunnable") << tactic;
  }
  plant(op, bucket, op.default_tactic(bucket).str());
  EXPECT_TRUE(TuningStore(cuda_backend(), path_).find(op, bucket).usable());
}

// The defect this guards: such an entry used to reach the launch, which failed with
// cudaErrorInvalidValue. Now the dispatcher skips it (one warning) and runs the default.
TEST_F(CudaTuningStoreTest, TheEntryPointRunsTheDefaultOverAnUnrunnableEntry) {
  const TunableOp &op = registered_op("gemv.bf16");
  const int64_t rows = 4, n = 1024, k = 2048;
  const Shape shape{{rows, n, k}, DType::bf16};
  const Shape bucket = op.buckets().map(shape).value();
  plant(op, bucket, uncompiled_gemv().str());

  DispatcherOptions options;
  options.cache_path = path_;
  Dispatcher d(cuda_backend(), options);
  const Resolution &r = d.resolve(op, shape);
  EXPECT_EQ(r.source, Source::default_tactic);
  EXPECT_EQ(r.tactic, op.default_tactic(bucket));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("cannot run"), std::string::npos) << warnings_[0];

  DeviceBuffer x(rows * k * 2), w(n * k * 2), y(rows * n * 2);
  HONE_CUDA_CHECK(cudaMemset(x.data(), 0, x.size()));
  HONE_CUDA_CHECK(cudaMemset(w.data(), 0, w.size()));
  HONE_CUDA_CHECK(cudaMemset(y.data(), 0xff, y.size()));
  // The entry point dispatches through its own op instance; this dispatcher sees the cache.
  EXPECT_NO_THROW(ops::cuda::gemv_bf16(x.data(), w.data(), y.data(), rows, n, k, nullptr, d));
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> out(static_cast<size_t>(rows * n));
  HONE_CUDA_CHECK(cudaMemcpy(out.data(), y.data(), y.size(), cudaMemcpyDeviceToHost));
  for (uint16_t v : out)
    ASSERT_EQ(v & 0x7fff, 0) << "0 x 0 must be written as zero";
}

TEST_F(CudaTuningStoreTest, AShapeTooLargeForTheDeviceIsRefusedBeforeAllocating) {
  Backend &be = cuda_backend();
  const std::optional<size_t> available = be.available_memory_bytes();
  ASSERT_TRUE(available.has_value());
  size_t free_bytes = 0, total_bytes = 0;
  HONE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT_GT(*available, 0u);
  EXPECT_LE(*available, total_bytes);

  const struct {
    const char *op;
    Shape shape; // 2^24 x 2^24 weights: no device holds them
  } cases[] = {
      {"gemv.bf16", Shape{{1, 1 << 24, 1 << 24}, DType::bf16}},
      {"qmv.affine", Shape{{1, 1 << 24, 1 << 24, 8, 64}, DType::bf16}},
  };
  for (const auto &c : cases) {
    const TunableOp &op = registered_op(c.op);
    const std::optional<std::string> why = memory_shortfall(be, op, c.shape);
    ASSERT_TRUE(why.has_value()) << c.op;
    const size_t need = op.workload_bytes(c.shape)->total(1);
    EXPECT_NE(why->find("needs " + std::to_string(need) + " bytes"), std::string::npos) << *why;
    EXPECT_NE(why->find("available"), std::string::npos) << *why;
    try {
      TuningStore(be, std::nullopt).tune(op, c.shape, TuneOptions{});
      ADD_FAILURE() << c.op << " tuned a shape needing " << need << " bytes";
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    }
    // Small shapes fit, and their estimate covers what prepare() allocates.
    const Shape small = c.shape.rank == 3 ? Shape{{4, 1024, 2048}, DType::bf16}
                                          : Shape{{4, 1024, 2048, 4, 64}, DType::bf16};
    EXPECT_EQ(memory_shortfall(be, op, small), std::nullopt);
    HONE_CUDA_CHECK(cudaDeviceSynchronize());
    size_t before = 0, after = 0, total = 0;
    HONE_CUDA_CHECK(cudaMemGetInfo(&before, &total));
    {
      std::unique_ptr<Workload> w = op.prepare(small);
      HONE_CUDA_CHECK(cudaMemGetInfo(&after, &total));
      // cudaMalloc rounds up to 2 MiB pages: allow that much per buffer.
      EXPECT_LE(before - after, op.workload_bytes(small)->total(1) + 8 * (size_t{2} << 20))
          << c.op;
    }
  }
}

} // namespace
} // namespace hone::cuda::testing

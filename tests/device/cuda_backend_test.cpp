// The CUDA backend: device facts, checked calls, RAII buffers, the event timer, graph and
// event batch timing, the LLC flush and the read-bandwidth probe.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"
#include "device_test.h"
#include "hone/build_info.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;

class CudaBackendTest : public DeviceTest {};

TEST_F(CudaBackendTest, DeviceInfoComesFromTheRuntime) {
  const DeviceInfo &info = backend().info();
  EXPECT_EQ(info.backend, "cuda");
  EXPECT_FALSE(info.model.empty());
  EXPECT_GT(info.compute_units, 0);
  EXPECT_GT(info.llc_bytes, size_t{1} << 20);
  EXPECT_TRUE(info.llc_known);
  ASSERT_EQ(info.compute_capability.size(), 3u) << info.compute_capability;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(info.compute_capability[0])));
  EXPECT_EQ(info.compute_capability[1], '.');
  EXPECT_EQ(info.runtime_version.rfind("cudart ", 0), 0u) << info.runtime_version;
  EXPECT_NE(info.driver_version.find("cuda "), std::string::npos) << info.driver_version;
  EXPECT_GT(info.memory_budget_bytes, 0u);
  EXPECT_EQ(backend().kernel_build_id(), HONE_CUDA_KERNEL_BUILD);
  std::printf("device: %s, %d SMs, L2 %zu bytes, cc %s, %s, driver %s, budget %zu MiB\n",
              info.model.c_str(), info.compute_units, info.llc_bytes,
              info.compute_capability.c_str(), info.runtime_version.c_str(),
              info.driver_version.c_str(), info.memory_budget_bytes >> 20);
}

TEST_F(CudaBackendTest, CheckedCallThrowsWithCallTextAndLocation) {
  try {
    HONE_CUDA_CHECK(cudaMemcpy(nullptr, nullptr, 16, cudaMemcpyDeviceToDevice));
    FAIL() << "expected hone::Error";
  } catch (const Error &e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(what.find("cudaMemcpy(nullptr, nullptr, 16, cudaMemcpyDeviceToDevice)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda_backend_test.cpp:"), std::string::npos) << what;
  }
  // The error was cleared: later calls are unaffected.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(CudaBackendTest, DeviceBufferOwnsAndMoves) {
  DeviceBuffer a(1 << 20);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.size(), size_t{1} << 20);
  void *p = a.data();
  DeviceBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_TRUE(a.empty()); // NOLINT(bugprone-use-after-move): moved-from state is specified
  DeviceBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), size_t{1} << 20);
  HONE_CUDA_CHECK(cudaMemset(c.data(), 0, c.size()));
  EXPECT_TRUE(DeviceBuffer(0).empty());
}

TEST_F(CudaBackendTest, EventTimerTimesDeviceWork) {
  CudaBackend &be = cuda_backend();
  DeviceBuffer buf(size_t{256} << 20);
  Timer &timer = be.timer();
  timer.start();
  const double empty = timer.stop();
  timer.start();
  fill_random_bf16(buf.data(), buf.size() / 2, 1, be.stream());
  const double busy = timer.stop();
  EXPECT_GE(empty, 0);
  EXPECT_LT(empty, 1e-3);
  EXPECT_GT(busy, empty);
  EXPECT_GT(timer.resolution(), 0);
}

// Both timing methods time the same launches and advance the copy cursor alike.
void expect_batch_timing(CudaBackend &be, const char *method) {
  EXPECT_EQ(be.method_id(), method);
  DeviceBuffer buf(size_t{64} << 20);
  int launches = 0;
  const LaunchFn launch = [&](int copy) {
    ++launches;
    fill_random_bf16(buf.data(), buf.size() / 2, static_cast<uint64_t>(copy), be.stream());
  };
  int next = 1;
  const double t5 = be.time_batch(launch, 5, 3, &next);
  EXPECT_EQ(launches, 5);
  EXPECT_EQ(next, 0); // copies 1, 2, 0, 1, 2 -> next 0
  const double t20 = be.time_batch(launch, 20, 3, &next);
  EXPECT_GT(t5, 0);
  EXPECT_GT(t20, 2 * t5) << "20 launches should take clearly longer than 5";
}

TEST_F(CudaBackendTest, GraphTimingReplaysTheCapturedBatch) {
  CudaBackend be(0, TimingMethod::graph);
  expect_batch_timing(be, "cuda.graph.v3");
}

TEST_F(CudaBackendTest, EventTimingTimesEnqueuedLaunches) {
  CudaBackend be(0, TimingMethod::events);
  expect_batch_timing(be, "cuda.events.v3");
}

TEST_F(CudaBackendTest, GraphCaptureEndsWhenALaunchThrows) {
  CudaBackend be(0, TimingMethod::graph);
  DeviceBuffer buf(1 << 20);
  int calls = 0;
  const LaunchFn failing = [&](int) {
    if (++calls == 2)
      throw std::runtime_error("launch failed");
    fill_random_bf16(buf.data(), buf.size() / 2, 7, be.stream());
  };
  int next = 0;
  EXPECT_THROW(be.time_batch(failing, 4, 1, &next), std::runtime_error);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  HONE_CUDA_CHECK(cudaStreamIsCapturing(be.stream(), &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  // The stream still works.
  const LaunchFn ok = [&](int) { fill_random_bf16(buf.data(), buf.size() / 2, 8, be.stream()); };
  EXPECT_GT(be.time_batch(ok, 2, 1, &next), 0);
}

TEST_F(CudaBackendTest, TimingMethodFromEnvironment) {
  ASSERT_EQ(setenv("HONE_TIMING", "events", 1), 0);
  EXPECT_EQ(timing_method_from_env(), TimingMethod::events);
  ASSERT_EQ(setenv("HONE_TIMING", "graph", 1), 0);
  EXPECT_EQ(timing_method_from_env(), TimingMethod::graph);
  ASSERT_EQ(setenv("HONE_TIMING", "clock", 1), 0);
  try {
    timing_method_from_env();
    FAIL() << "expected hone::Error";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("clock"), std::string::npos);
  }
  ASSERT_EQ(unsetenv("HONE_TIMING"), 0);
  EXPECT_EQ(timing_method_from_env(), TimingMethod::graph);
}

TEST_F(CudaBackendTest, FlushAndSync) {
  Backend &be = backend();
  be.flush_llc();
  be.flush_llc(); // the buffer is reused
  be.sync();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(CudaBackendTest, ReadBandwidthProbe) {
  Backend &be = backend();
  const std::optional<double> bw = be.measure_read_bandwidth();
  ASSERT_TRUE(bw.has_value());
  // Any HBM or GDDR device lies between these; the H200 reads ~4e12 bytes/s.
  EXPECT_GT(*bw, 1e11);
  EXPECT_LT(*bw, 2e13);
  EXPECT_EQ(be.measure_read_bandwidth(), bw) << "measured once, then remembered";
  std::printf("read bandwidth: %.0f GB/s\n", *bw / 1e9);
}

} // namespace
} // namespace hone::cuda

// Shared fixtures of the GPU tests: DeviceTest skips cleanly where no CUDA device is present,
// PdlDeviceTest also where the current device has no programmatic dependent launch.
//
//   class MyTest : public hone::cuda::testing::DeviceTest {};
//   TEST_F(MyTest, Works) { ... }   // skipped on a machine without a GPU
#pragma once

#include <cstdlib>
#include <string_view>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_check.h"

namespace hone::cuda::testing {

class DeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!device_present())
      GTEST_SKIP() << "no CUDA device present";
  }
};

// For tests of programmatic dependent launch: skipped, naming the compute capability, on a
// current device before sm_90. The launchers drop the PDL attribute there (pdl_supported()), so
// such a test would only compare the serial chain with itself.
class PdlDeviceTest : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    int device = 0, major = 0, minor = 0;
    HONE_CUDA_CHECK(cudaGetDevice(&device));
    HONE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    HONE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major < 9)
      GTEST_SKIP() << "programmatic dependent launch needs sm_90 or newer; device " << device
                   << " has compute capability " << major << "." << minor;
  }
};

// HONE_DEVICE_TEST_REDUCED=1 selects a small shape set (used under compute-sanitizer, where
// kernels run many times slower); =2 a smaller one still, for the tests whose reduced set is
// too long under racecheck (every config once or twice, on one shape per format family).
// 0 (unset or any other value), 1 or 2.
inline int reduced_level() {
  const char *v = std::getenv("HONE_DEVICE_TEST_REDUCED");
  const std::string_view level = v ? v : "";
  return level == "1" ? 1 : level == "2" ? 2 : 0;
}
inline bool reduced_shapes() { return reduced_level() >= 1; }
inline bool minimal_shapes() { return reduced_level() == 2; }

} // namespace hone::cuda::testing

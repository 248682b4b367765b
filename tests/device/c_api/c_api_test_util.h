// What the C API device tests share: whether a device is present, and a device copy of a host
// vector that frees itself. They link libhone.so and the CUDA runtime only, as a foreign
// caller would.
//
//   if (!device_present()) GTEST_SKIP() << "no CUDA device";
//   DeviceCopy x(host_x);   hone_qmv_affine_bf16(x.get(), ...);   y.to_host(host_y);
#pragma once

#include <cstddef>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

namespace {

bool device_present() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return ok;
}

// A device copy of a host vector, freed with the object.
class DeviceCopy {
public:
  template <class T>
  explicit DeviceCopy(const std::vector<T> &host) : bytes_(host.size() * sizeof(T)) {
    if (cudaMalloc(&data_, bytes_) != cudaSuccess ||
        cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice) != cudaSuccess)
      ADD_FAILURE() << "device copy of " << bytes_ << " bytes failed";
  }
  ~DeviceCopy() { cudaFree(data_); }
  DeviceCopy(const DeviceCopy &) = delete;
  DeviceCopy &operator=(const DeviceCopy &) = delete;
  void *get() const { return data_; }
  template <class T> const T *as() const { return static_cast<const T *>(data_); }
  template <class T> void to_host(std::vector<T> &host) const {
    ASSERT_EQ(cudaMemcpy(host.data(), data_, host.size() * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
  }

private:
  void *data_ = nullptr;
  size_t bytes_;
};

} // namespace

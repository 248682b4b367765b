// DeviceBuffer: one owned cudaMalloc allocation (RAII, move-only).
//
//   hone::cuda::DeviceBuffer w(n * k * sizeof(uint16_t));
//   kernel<<<g, b, 0, s>>>(w.as<uint16_t>());
//   // freed when w goes out of scope
#pragma once

#include <cstddef>

namespace hone::cuda {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  // Allocates `bytes` of device memory (none for 0); throws Error(runtime) on failure.
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *data() const { return data_; }
  template <class T> T *as() const { return static_cast<T *>(data_); }
  size_t size() const { return bytes_; } // [bytes]
  bool empty() const { return data_ == nullptr; }

private:
  void release() noexcept;
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

} // namespace hone::cuda

#include "cuda/backend/device_buffer.h"

#include <utility>

#include "cuda/backend/cuda_check.h"

namespace hone::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0)
    HONE_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (data_) {
    // NOTE: a destructor must not throw; a failure here (e.g. the runtime already unloaded
    // at process exit) leaves nothing to recover.
    (void)cudaFree(data_);
    (void)cudaGetLastError();
    data_ = nullptr;
    bytes_ = 0;
  }
}

} // namespace hone::cuda

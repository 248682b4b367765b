#include "cuda/backend/workspace.h"

#include <map>
#include <mutex>

#include "cuda/backend/device_buffer.h"

namespace hone::cuda {

void *workspace_for(void *stream, size_t bytes) {
  static std::mutex mutex;
  static std::map<void *, DeviceBuffer> buffers;
  std::lock_guard<std::mutex> lock(mutex);
  DeviceBuffer &b = buffers[stream];
  if (b.size() < bytes)
    b = DeviceBuffer(bytes);
  return b.data();
}

} // namespace hone::cuda

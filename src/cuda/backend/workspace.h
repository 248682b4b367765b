// Workspace: scratch device memory for ops that need it (split-K partials, split-KV partial
// states), one buffer per stream, grown on demand and never shrunk. The entry points take it
// from here, so a caller never allocates an op's scratch.
//
//   void *ws = hone::cuda::workspace_for(stream, bytes);   // valid until the next larger ask
#pragma once

#include <cstddef>

namespace hone::cuda {

// At least `bytes` of device memory private to `stream` (nullptr: the legacy stream).
// NOTE: growing frees the old buffer with cudaFree, which waits for the device, so a launch
// still reading it has finished. Thread-safe; throws Error(runtime) when allocation fails.
void *workspace_for(void *stream, size_t bytes);

} // namespace hone::cuda

// Device-side counts over a bf16 output, for the gate and the step bench: the NaNs it holds
// (unwritten poison) and the elements that differ bit for bit from another tensor (the rows=1
// default's results, a step's reference outputs). Only the count crosses to the host, not the
// output (hundreds of MB at a prefill bucket).
//
//   DeviceBuffer counter(sizeof(unsigned long long));
//   const uint64_t nans = count_bf16(y, nullptr, n, counter, stream);  // synchronous
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/backend/device_buffer.h"

namespace hone::cuda {

// Adds to device *out the number of the `count` bf16 elements of device `a` that are NaN when
// `b` is null, else that differ bitwise from device `b`. Asynchronous on `stream` (a CUDA graph
// may capture it): the step bench's bit checks count with it over many replays.
void add_count_bf16(const uint16_t *a, const uint16_t *b, size_t count, unsigned long long *out,
                    cudaStream_t stream);
// The number of the `count` bf16 elements of device `a` that are NaN (exponent all ones and a
// non-zero mantissa) when `b` is null, else that differ bitwise from device `b`. Runs on
// `stream` after the work already on it and synchronises it. `counter` is device scratch of at
// least sizeof(unsigned long long) bytes.
uint64_t count_bf16(const uint16_t *a, const uint16_t *b, size_t count, const DeviceBuffer &counter,
                    cudaStream_t stream);

} // namespace hone::cuda

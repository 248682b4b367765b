// Streaming-read bandwidth probe: every byte of a large device buffer is read once per run
// with 16-byte loads; the figure later reports quote fractions of.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace hone::cuda {

struct ReadProbeOptions {
  size_t bytes = size_t{2} << 30; // [bytes] buffer read per run; >= 2 GiB dwarfs any L2
  int warmup_runs = 2;
  int timed_runs = 9;
};

// [bytes/second] median over timed runs of bytes / elapsed; allocates and frees its own
// buffer and runs on `stream` (synchronised on return).
double run_read_bandwidth_probe(cudaStream_t stream, int sm_count,
                                const ReadProbeOptions &options = {});

} // namespace hone::cuda

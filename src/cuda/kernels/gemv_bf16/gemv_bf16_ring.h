// gemv.bf16's ring path (`gemv.bf16.ring:...`, gemv_bf16_ring.cu): the mma path's arithmetic and
// K order over weights streamed once through a shared-memory ring by a producer warp (a
// persistent grid; ../common/weight_ring.h reads the fields). The tactic has the stream path's
// fields: rows_per_cta 8, 16 or 32 (rows <= rows_per_cta), warps = warps_n x warps_k consumer
// warps, warps_k K slices (the mma path's k_slices), outputs_per_warp 16 or 32, split_k 1,
// vec 16, stages, ctas_per_sm. No CUDA header needed by includers.
#pragma once

#include <vector>

#include "cuda/kernels/gemv_bf16/gemv_bf16.h"

namespace hone::cuda {

// Elements per chunk of a weight row (64 bytes), the ring's unit of K.
inline constexpr int kGemvBf16RingChunkK = 32;

// Appends every compiled ring config.
void append_gemv_bf16_ring_configs(std::vector<GemvBf16Config> &out);
// Empty resources for a config that is not a compiled ring config.
KernelResources gemv_bf16_ring_resources(const GemvBf16Config &config);
// Enqueues one launch; invalid value for a config or shape the path cannot take (K not a
// multiple of 32). Never synchronises.
LaunchStatus gemv_bf16_ring_launch(const GemvBf16Config &config, const GemvBf16Args &args,
                                   void *stream);

} // namespace hone::cuda

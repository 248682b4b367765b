// qmv.affine's ring path (`qmv.affine.ring:...`, qmv_affine_ring.cu): the mma path's arithmetic
// and K order over packed words streamed once through a shared-memory ring by a producer warp
// (a persistent grid). The tactic has the mma path's fields, read as:
//   rows_per_cta      8, 16 or 32 activation rows, all in the CTA (rows <= rows_per_cta)
//   warps             consumer warps = warps_n x warps_k (one producer warp more)
//   warps_k           K slices (split_k is 1): the mma path's k_slices, so a ring config is
//                     bit-identical to the mma configs of equal k_slices
//   outputs_per_warp  weight rows per consumer warp: 16 or 32 (one or two m16 tiles)
// plus the stream path's
//   stages            ring depth
//   ctas_per_sm       resident CTAs per SM of the persistent grid (1 or 2)
// A tile is warps_n x outputs_per_warp weight rows; the chunks per ring step come from the
// config (ring_step_chunks, ../common/weight_ring.h). No CUDA header needed by includers.
#pragma once

#include <vector>

#include "cuda/kernels/qmv_affine/qmv_affine.h"

namespace hone::cuda {

// Appends every compiled ring config for `bits` (4 or 8).
void append_qmv_affine_ring_configs(int bits, std::vector<QmvAffineConfig> &out);
// Empty resources for a config that is not a compiled ring config.
KernelResources qmv_affine_ring_resources(const QmvAffineConfig &config, int bits);
// Enqueues one launch; invalid value for a config or shape the path cannot take. Never
// synchronises.
LaunchStatus qmv_affine_ring_launch(const QmvAffineConfig &config, const QmvAffineArgs &args,
                                    void *stream);

} // namespace hone::cuda

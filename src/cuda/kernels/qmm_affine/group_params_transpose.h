// The group parameters of the affine format (scales and biases, bf16 [n, groups]) transposed
// to [groups, n], N fastest: the layout the qmm.affine kernels read them in (CUTLASS's
// mixed-input collectives load scales and zero-points N-major with TMA). Done per launch into
// the caller's workspace, so the weights keep their one layout. No CUDA header needed by
// includers.
//
//   transpose_group_params(scales, biases, scales_t, biases_t, n, groups, stream);
#pragma once

namespace hone::cuda {

// scales_t[g, j] = scales[j, g] and biases_t[g, j] = biases[j, g] for j < n, g < groups: bf16
// bit patterns, copied exactly. Enqueued on `stream` (a cudaStream_t); never synchronises.
// Returns the cudaError_t of the launch as int (0 = ok); invalid_value for a non-positive n or
// groups, or groups > 2^21.
int transpose_group_params(const void *scales, const void *biases, void *scales_t, void *biases_t,
                           int n, int groups, void *stream);

} // namespace hone::cuda

// qmv.affine shape arithmetic shared by the config logic and the launcher (host only).
#pragma once

#include "cuda/kernels/qmv_affine/qmv_affine.h"

namespace hone::cuda {

// K values per chunk: 4 lanes x 4 packed words per weight row (qmv_affine.cuh).
inline int qmv_affine_chunk_k(int bits) { return 16 * (32 / bits); }

// Chunks per K slice; depends on k, bits and k_slices only.
inline int qmv_affine_slice_chunks(const QmvAffineConfig &c, int k, int bits) {
  const int chunk_k = qmv_affine_chunk_k(bits);
  const int chunks = (k + chunk_k - 1) / chunk_k;
  const int slices = qmv_affine_k_slices(c);
  return (chunks + slices - 1) / slices;
}

} // namespace hone::cuda

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

// --- the ring path (qmv_affine_ring.cu) ---------------------------------------------------
// A ring config's CTA: warps = warps_n x warps_k consumer warps (plus the producer); consumer
// (warp_n, warp_k) takes outputs_per_warp weight rows of the tile and K slice warp_k, so a tile
// has warps_n x outputs_per_warp rows. A ring step holds, for every slice, `step_chunks` chunks
// (64 bytes each) of every row of the tile.

// [bytes] of one packed chunk of a weight row, at either bit width (16 words).
inline constexpr int kQmvRingChunkBytes = 64;
// [bytes] the ring step a config aims at, summed over the tile's rows and slices.
inline constexpr int kQmvRingStepTarget = 8192;

inline int qmv_affine_ring_tile_rows(const QmvAffineConfig &c) {
  return c.warps / c.warps_k * c.outputs_per_warp;
}

// Chunks per slice and step: the power of two in 1..4 that brings a step closest to
// kQmvRingStepTarget from below (one chunk where one already reaches it).
inline int qmv_affine_ring_step_chunks(const QmvAffineConfig &c) {
  const int per_chunk = c.warps_k * qmv_affine_ring_tile_rows(c) * kQmvRingChunkBytes;
  int chunks = 1;
  while (chunks < 4 && 2 * chunks * per_chunk <= kQmvRingStepTarget)
    chunks *= 2;
  return chunks;
}

// [bytes] a row's pitch in a stage: step_chunks x 64, made 64 mod 128 so that the 16-byte
// fragment loads of a quarter warp (rows 2i and 2i + 1, 64 bytes each) cover all 32 banks.
inline int qmv_affine_ring_pitch(int step_chunks) {
  return kQmvRingChunkBytes * (step_chunks % 2 == 1 ? step_chunks : step_chunks + 1);
}

// [bytes] one ring stage: every slice's step_chunks chunks of every row of the tile.
inline int qmv_affine_ring_stage_bytes(const QmvAffineConfig &c) {
  return c.warps_k * qmv_affine_ring_tile_rows(c) *
         qmv_affine_ring_pitch(qmv_affine_ring_step_chunks(c));
}

// [bytes] dynamic shared memory: the ring's barriers (256), the consumers' fp32 partials (one
// m16n8 tile per lane, MT x NT of them per warp) and the stages.
inline int qmv_affine_ring_shared_bytes(const QmvAffineConfig &c) {
  const int mt = c.outputs_per_warp / 16, nt = c.rows_per_cta / 8;
  return 256 + c.warps * mt * nt * 512 + c.stages * qmv_affine_ring_stage_bytes(c);
}

} // namespace hone::cuda

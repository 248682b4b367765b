// qmv.affine shape arithmetic shared by the config logic and the launcher (host only).
#pragma once

#include <cstdint>

#include "cuda/kernels/qmv_affine/qmv_affine.h"

namespace hone::cuda {

// K values per chunk: 4 lanes x 4 packed words per weight row (qmv_affine.cuh).
inline int qmv_affine_chunk_k(int bits) { return 16 * (32 / bits); }

// The grouped kernels (and the mma kernels where kQmvMmaOffsets32, qmv_affine.cuh) address words
// and group parameters by 32-bit element offsets: fewer than 2^31 packed words (and so group
// parameters). Both paths refuse larger shapes, so that the switch changes no accepted shape.
inline bool qmv_affine_offsets_fit(int n, int k, int bits) {
  return static_cast<long long>(n) * k / (32 / bits) < (1ll << 31);
}

// Whether int4 g64 takes the two-group chunks (below). Correct and batch-invariant on an H100,
// but the two-group default took 1.09-1.46x the per-weight default's time, level only on
// 4096 x 14336 at rows 1-8 (docs/benchmark_results/2026-12-05-h100-2; notes v9, measured): the
// fp32 group work and the split loads outweigh the per-weight arithmetic saved. With one 32-bit
// load a parameter pair it took 1.025 at one row and 0.949 at 16 on 28672 x 4096
// (docs/benchmark_results/2026-12-06-h100, call1). Since the form fixes the bits of every row
// count, it would become the default only where a GPU run shows it faster over rows 1-32;
// QmvAffineArgs::chunk_groups still runs it for tests and the harness.
inline constexpr bool kQmvAffineTwoGroupChunks = false;

// int4 g64 per weight, the mma kernels' register pipeline at J 2 or 4 with one activation tile:
// each parameter word holds both groups of a chunk, and a block of J chunks takes each row's
// scales (and biases) in one J x 4-byte vector load where the slice's chunks, the rows' groups
// and the arrays align, in place of one 2-byte load a chunk (qmv_affine.cuh). Same values, so
// the same bits. On the H200 the J 2 kernels took 0.85-0.90 of their time without it on
// 28672 x 4096 at rows 1-8 (docs/benchmark_results/2026-12-06-h200, call1);
// bench/read_ceiling's vector pattern read 0.81-0.85 of the bandwidth where the per-chunk loads
// read 0.75 (H100).
// The same vectors in the cp.async ring's blocks, and pairs for the factored chunks of one group
// each (int4 g128, int8 g64), were built (6be5160, 8a8b49c, 18d5aad) and measured on an H100:
// level to 3.6 % slower (docs/benchmark_results/2026-12-06-h100-2, call2). Taken out again.
inline constexpr bool kQmvParameterVectors = true;

// `deep=2` (QmvAffineConfig::deep; the DEEP twin in qmv_affine.cuh): the slice length in chunks
// from which a warp's register pipeline holds two blocks of words ahead. Shorter slices run the
// same kernel's one-block loop; a deep config whose slices are all shorter is refused.
inline constexpr int kQmvAffineDeepMinChunks = 24;

// The dequantisation of the mma and ring paths' chunks (qmv_affine.cuh, mma_chunk's GROUPS):
// 1, factored with one group per chunk (group >= chunk); 2, factored with two (4 bits, group
// half a chunk, K a multiple of the chunk, so that no chunk is cut; where `two_group_chunks`);
// 0, per weight (the rest). A function of (bits, group, k) only, so part of the summation order
// that k_slices fixes.
inline int qmv_affine_chunk_groups(int bits, int group, int k,
                                   bool two_group_chunks = kQmvAffineTwoGroupChunks) {
  const int chunk_k = qmv_affine_chunk_k(bits);
  if (group >= chunk_k)
    return 1;
  if (two_group_chunks && bits == 4 && 2 * group == chunk_k && k % chunk_k == 0)
    return 2;
  return 0;
}

// The dequantisation a launch takes: `requested` (QmvAffineArgs::chunk_groups) where the shape
// allows it, the shape's where it is -1, else -1 (refused).
inline int qmv_affine_launch_chunk_groups(int requested, int bits, int group, int k) {
  if (requested < 0)
    return qmv_affine_chunk_groups(bits, group, k);
  const bool allowed = requested == 0 || (requested == 1 && group >= qmv_affine_chunk_k(bits)) ||
                       (requested == 2 && qmv_affine_chunk_groups(bits, group, k, true) == 2);
  return allowed ? requested : -1;
}

// Whether a kernel can read group parameters in 32-bit words (two groups' scales or biases a
// load): both arrays 4-byte aligned. The two-group chunks (2 above; their rows then are aligned
// too, K being a multiple of the chunk) and the grouped path at groups under 128 load them so;
// their launchers refuse arrays that are not.
inline bool qmv_affine_parameter_pairs_aligned(const void *scales, const void *biases) {
  return reinterpret_cast<uintptr_t>(scales) % 4 == 0 &&
         reinterpret_cast<uintptr_t>(biases) % 4 == 0;
}

// Whether the shallow kernel of C = `shallow` chunks (QmvAffineConfig::shallow) takes slices of
// `slice` chunks: 1-2 at C 2, 3-4 at C 4 (a shorter slice runs the smaller kernel).
inline bool qmv_affine_shallow_slice_fits(int shallow, int slice) {
  return slice <= shallow && slice >= (shallow == 2 ? 1 : 3);
}
// Chunks per K slice; depends on k, bits and k_slices only.
inline int qmv_affine_slice_chunks(const QmvAffineConfig &c, int k, int bits) {
  const int chunk_k = qmv_affine_chunk_k(bits);
  const int chunks = (k + chunk_k - 1) / chunk_k;
  const int slices = qmv_affine_k_slices(c);
  return (chunks + slices - 1) / slices;
}

} // namespace hone::cuda

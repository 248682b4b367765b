// Stream-K partition of a tiled GEMM's work over a persistent grid, shared by the host (grid and
// workspace size, tests) and the kernels that walk it (qmm.affine's TMA engine). No CUDA header
// needed by includers.
//
// The work is `tiles` output tiles of `blocks` K blocks each: units u = tile x blocks + kb, in
// tile order. CTA c of `ctas` takes the contiguous units [begin(c), begin(c + 1)), so every CTA
// runs within one unit of the same count, whatever the tile count. A CTA's units fall into
// segments, one per tile it touches, of three kinds:
//   whole   the segment spans K blocks 0 .. blocks - 1: the CTA stores the tile;
//   writer  it starts after K block 0: the CTA's first segment (a segment that does not start
//           the CTA's range starts a tile). The CTA stores its fp32 partial in slot c and
//           raises flag c; it never waits.
//   reader  it starts at K block 0 and ends before the last: the CTA's last segment. The CTA
//           adds, in K order, its own partial and those of the writer CTAs c + 1, c + 2, ...
//           that hold the rest of the tile, then stores the tile.
// So each tile is stored once and summed in a fixed order (a function of the tile count, blocks
// and ctas only), each CTA uses at most one slot, and a CTA waits only in its last segment, for
// CTAs that write in their first: no cycle, provided every CTA is resident at once.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HONE_STREAM_K_FN __host__ __device__ __forceinline__
#else
#define HONE_STREAM_K_FN inline
#endif

namespace hone::cuda {

struct StreamK {
  int units = 0;  // tiles x blocks
  int blocks = 1; // K blocks per tile
  int ctas = 1;   // persistent CTAs, at most units

  // The first unit of CTA c, 0 <= c <= ctas (begin(ctas) == units).
  HONE_STREAM_K_FN int begin(int c) const {
    return static_cast<int>(static_cast<int64_t>(c) * units / ctas);
  }
  // The tile's first unit past its last K block.
  HONE_STREAM_K_FN int tile_end(int tile) const { return (tile + 1) * blocks; }
  // What a CTA does with a segment of K blocks first_kb .. last_kb of one tile.
  enum class Role { whole, writer, reader };
  HONE_STREAM_K_FN Role role(int first_kb, int last_kb) const {
    return first_kb > 0 ? Role::writer : last_kb < blocks - 1 ? Role::reader : Role::whole;
  }
  // True when the CTA's i-th unit u (of `count`) is the last of its segment.
  HONE_STREAM_K_FN bool ends_segment(int u, int i, int count) const {
    return u % blocks == blocks - 1 || i == count - 1;
  }
  // The next writer of a tile whose reader is CTA `reader`, after `previous` (the reader itself
  // on the first call); -1 when the tile has no more writers.
  HONE_STREAM_K_FN int next_writer(int tile, int previous) const {
    const int c = previous + 1;
    return c < ctas && begin(c) < tile_end(tile) ? c : -1;
  }
};

} // namespace hone::cuda

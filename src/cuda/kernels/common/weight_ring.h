// Host side of the GEMV family's weights-once ring kernels (weight_ring.cuh): a ring config's
// geometry, its tactic axes and whether it can launch. No CUDA header needed by includers.
//
// A ring config is a family config (SplitKCta + StreamRingFields) read as: warps = warps_n x
// warps_k consumer warps (one producer warp more), warps_k K slices (the mma path's k_slices;
// split_k 1), outputs_per_warp weight rows per consumer (16 or 32: one or two m16 tiles),
// rows_per_cta activation rows (8, 16 or 32; rows <= rows_per_cta), stages and ctas_per_sm.
// A stage holds the step's weights and the activations of the same K: `chunk_k` bf16 values per
// activation row and chunk (the op's chunk of K: 32 for gemv.bf16, 64 / 128 for 8 / 4-bit
// qmv.affine).
//
//   append_ring_configs(base, max_consumers, pair_consumers, chunk_k, out);  // the tactic axes
//   const int bytes = ring_shared_bytes(config, config, chunk_k); // what a launch asks
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/common/kernel_types.h"
#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/common/weight_stream.h"
#include "hone/error.h"
#include "hone/tactic.h"

namespace hone::cuda {

// [bytes] of one chunk of a weight row, in every op (32 bf16, 64 int8 or 128 int4 values).
inline constexpr int kRingChunkBytes = 64;
// Weight rows of a tile: warps_n x outputs_per_warp.
inline int ring_tile_rows(const SplitKCta &c) { return c.warps / c.warps_k * c.outputs_per_warp; }

// [bytes] of one chunk of every K slice in a stage: the tile's weights and the CTA's
// activation rows.
inline int ring_chunk_bytes(const SplitKCta &c, int chunk_k) {
  return c.warps_k * (ring_tile_rows(c) * kRingChunkBytes + c.rows_per_cta * 2 * chunk_k);
}

// [bytes] a ring step may reach, summed over the slices' weights and activations; and the most
// a two-chunk step of a config that asks for it (StreamRingFields::step_chunks = 2) may take.
inline constexpr int kRingStepTarget = 40960;
inline constexpr int kRingStepMax = 65536;

// Chunks per slice and step: 4, 2 or 1, the most whose step stays within kRingStepTarget. A
// slice's chunks of a step arrive as one TMA box {16 x chunks words, tile rows}, so each box row
// is 64-256 bytes: on the H200 boxes of 64-byte rows read at most 0.58-0.70 of the bandwidth,
// 256-byte rows within 2 % of the loads-only patterns (read_ceiling's tma pattern,
// docs/notes/qmv_affine.md, v8). One chunk where two exceed the target: many slices of 32
// activation rows, whose activations outweigh their weights, and the 8-slice 32-row tiles of
// 8 activation rows, which lost a third of their speed on 4096-row matrices for it (H200,
// 2026-12-05, call 5). Two chunks in two stages there (a step of up to kRingStepMax) is a config
// of its own (append_ring_configs), for the tune to weigh. The launch takes fewer where a K slice
// has fewer chunks (ring_launch_step_chunks).
inline int ring_rule_step_chunks(const SplitKCta &c, int chunk_k) {
  const int per_chunk = ring_chunk_bytes(c, chunk_k);
  return 4 * per_chunk <= kRingStepTarget ? 4 : 2 * per_chunk <= kRingStepTarget ? 2 : 1;
}
// The config's chunks per step: its own (StreamRingFields::step_chunks), else the rule's.
inline int ring_step_chunks(const SplitKCta &c, const StreamRingFields &r, int chunk_k) {
  return r.step_chunks > 0 ? r.step_chunks : ring_rule_step_chunks(c, chunk_k);
}

// The chunks per step a launch uses: ring_step_chunks, halved while a K slice (slice_chunks) is
// shorter, so that a box reads no chunk of the next slice where a whole step fits in one.
inline int ring_launch_step_chunks(const SplitKCta &c, const StreamRingFields &r, int chunk_k,
                                   int slice_chunks) {
  int chunks = ring_step_chunks(c, r, chunk_k);
  while (chunks > 1 && chunks > slice_chunks)
    chunks /= 2;
  return chunks;
}

// [bytes] one ring stage: per slice, a plane of tile_rows x (step chunks x 64) bytes of weights,
// then per chunk of the step one block of rows_per_cta x chunk_k bf16 activations.
inline int ring_stage_bytes(const SplitKCta &c, const StreamRingFields &r, int chunk_k) {
  return ring_step_chunks(c, r, chunk_k) * ring_chunk_bytes(c, chunk_k);
}

// [bytes] dynamic shared memory: the ring's barriers, the consumers' fp32 partials (one m16n8
// tile per lane, MT x NT of them per warp) and the stages.
inline int ring_shared_bytes(const SplitKCta &c, const StreamRingFields &r, int chunk_k) {
  const int mt = c.outputs_per_warp / 16, nt = c.rows_per_cta / 8;
  return 256 + c.warps * mt * nt * 512 + r.stages * ring_stage_bytes(c, r, chunk_k);
}

// The ring tactics' optional last field, `step=N` (StreamRingFields::step_chunks: 1, 2 or 4),
// spelled only where a config sets it, so that every other ring tactic keeps its spelling.
inline Tactic with_ring_step(Tactic tactic, const StreamRingFields &r) {
  if (r.step_chunks > 0)
    tactic.params.emplace_back("step", r.step_chunks);
  return tactic;
}
// `tactic` without a last `step` field, whose value goes to r.step_chunks. Throws
// Error(invalid_argument) naming a step other than 1, 2 or 4 chunks.
inline Tactic take_ring_step(Tactic tactic, StreamRingFields &r) {
  return take_last_power_field(std::move(tactic), "step", "chunks", &r.step_chunks);
}

// Whether a ring config's shared memory, ctas_per_sm times over, fits an SM.
inline bool ring_fits(const SplitKCta &c, const StreamRingFields &r, int chunk_k) {
  return static_cast<size_t>(ring_shared_bytes(c, r, chunk_k)) * r.ctas_per_sm <=
         kStreamMaxSharedBytes;
}

// Whether a ring config can launch `rows` activation rows over `chunks` (whole) K chunks with a
// kernel of at most `max_consumers` consumer warps.
inline bool ring_launch_fits(const SplitKCta &c, const StreamRingFields &r, int rows, int chunks,
                             int max_consumers) {
  return rows >= 1 && rows <= c.rows_per_cta && c.warps_k >= 1 && c.warps % c.warps_k == 0 &&
         c.warps <= max_consumers && c.split_k == 1 && c.warps_k <= chunks && r.stages >= 2 &&
         r.stages <= 16 && r.ctas_per_sm >= 1 && ring_tile_rows(c) <= 256 && // a TMA box's rows
         (r.step_chunks == 0 || r.step_chunks == 1 || r.step_chunks == 2 || r.step_chunks == 4);
}

// The most consumer warps a CTA of a ring kernel of `registers` per thread may have at two CTAs
// per SM: two CTAs of that many warps and the producer within the SM's 64 K registers, as
// allocated (per thread, in steps of 8). The ops' kernel tables hold it per kernel from
// ptxas's counts, and a device test holds every pair offered to the compiled kernels' counts.
// Why pairs: the ncu of the 16-consumer qmv.affine ring at one row (2026-12-05-h200-2, call 5)
// had 4.2 warps per scheduler with the issue slots 57 % busy, stalled mostly on dependencies
// (1.59 cycles per issue on fixed latencies, 1.03 on shared memory, 0.93 on global loads).
constexpr int ring_pair_consumers(int registers) {
  const int allocated = (registers + 7) / 8 * 8;
  return 65536 / (2 * 32 * allocated) - 1;
}

// The ops' ring default at `slices` K slices (the mma path's order of that k_slices): `c`
// (the op's own fields set) with 8, 16 or 32 activation rows per CTA by `rows`, one m16 tile
// per warp, as many consumer warps as the kernel takes (16 up to `wide_rows` activation rows per
// CTA, 8 above; at least `slices`) as K slices x row groups, 4 stages (2 where 4 do not fit:
// many slices of 32 activation rows), one CTA per SM.
template <class Config>
Config ring_default_shape(Config c, int rows, int slices, int wide_rows, int chunk_k) {
  c.path = KernelPath::ring;
  c.rows_per_cta = rows <= 8 ? 8 : rows <= 16 ? 16 : 32;
  c.outputs_per_warp = 16;
  c.warps_k = slices;
  c.warps = std::max(c.rows_per_cta <= wide_rows ? 16 : 8, c.warps_k);
  c.split_k = 1;
  c.async = 0;
  c.stages = 4;
  c.ctas_per_sm = 1;
  if (!ring_fits(c, c, chunk_k))
    c.stages = 2;
  return c;
}

// The ring's tactic axes. Consumer warps per CTA 4 to 16, as many as the kernel takes
// (`max_consumers`), split as warps_k K slices (a power of two: the mma path's k_slices) x
// warps_n row groups (any count); 4 or 8 stages (2 and 3 where 4 do not fit), and where the rule
// steps one chunk, two-chunk steps in 2 or 4 stages (step_chunks = 2); two CTAs per SM at up to
// `pair_consumers` consumers (ring_pair_consumers of the kernel's registers). Appends `base`
// (its kernel's rows_per_cta and outputs_per_warp set) at every point that fits (ring_fits),
// as KernelPath::ring.
template <class Config>
void append_ring_configs(const Config &base, int max_consumers, int pair_consumers, int chunk_k,
                         std::vector<Config> &out) {
  for (int consumers : {4, 6, 8, 10, 12, 16}) {
    if (consumers > max_consumers)
      continue;
    for (int slices : {1, 2, 4, 8, 16}) {
      if (consumers % slices != 0)
        continue;
      for (int per_sm : {1, 2}) {
        if (per_sm == 2 && consumers > pair_consumers)
          continue;
        Config c = base;
        c.path = KernelPath::ring;
        c.warps = consumers;
        c.warps_k = slices;
        c.split_k = 1;
        c.async = 0;
        c.ctas_per_sm = per_sm;
        // A tile is one TMA box high: at most 256 rows.
        if (ring_tile_rows(c) > 256)
          continue;
        auto fits = [&](int stages) {
          c.stages = stages;
          return ring_fits(c, c, chunk_k);
        };
        // Two or three stages only where four do not fit (many slices of 32 activation rows,
        // pairs of CTAs): three keep two steps in flight where two keep one.
        const bool four = fits(4);
        for (int stages : {2, 3, 4, 8})
          if ((stages >= 4 || !four) && fits(stages))
            out.push_back(c);
        // Where the rule steps one chunk at a time (64-byte box rows), also two chunks in as
        // many stages as fit, up to a kRingStepMax step.
        if (ring_rule_step_chunks(c, chunk_k) == 1 &&
            2 * ring_chunk_bytes(c, chunk_k) <= kRingStepMax) {
          c.step_chunks = 2;
          for (int stages : {2, 4})
            if (fits(stages))
              out.push_back(c);
          c.step_chunks = 0;
        }
        // Where the rule's four-chunk step leaves room for two stages only (pairs of CTAs, many
        // slices), also two-chunk steps (128-byte box rows) in four stages: three steps in
        // flight instead of one.
        if (!four && ring_rule_step_chunks(c, chunk_k) == 4) {
          c.step_chunks = 2;
          if (fits(4))
            out.push_back(c);
          c.step_chunks = 0;
        }
      }
    }
  }
}

} // namespace hone::cuda

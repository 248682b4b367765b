// qmv.affine host logic: tactic conversion, the static default and can_implement. The
// compiled kernels and the config list are in qmv_affine.cu.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kMmaKernel = "qmv.affine.mma";
constexpr const char *kStreamKernel = "qmv.affine.stream";
constexpr const char *kGroupedKernel = "qmv.affine.grouped";
constexpr const char *kRingKernel = "qmv.affine.ring";
constexpr const char *kStreamFields[] = {"stages", "ctas_per_sm"}; // after the family's
constexpr const char *kAheadField = "ahead"; // the mma path's optional fields, in this order
constexpr const char *kDeepField = "deep";
constexpr const char *kShallowField = "shallow";

// SWITCH: true makes qmv_affine_default the stream path's default (qmv_affine_stream_default).
// Flip it only after the H200 sweep of tests/device/qmv_affine_kernel_test.cu shows the stream
// default at or above the mma default in every cell (docs/notes/qmv_affine.md, v5).
constexpr bool kQmvAffineDefaultIsStream = false;

// SWITCH: true makes the grouped path (exact-integer mma for every group) the default at 4 bits
// where it can run (K a multiple of 128). Set after the H200 sweep of the kernel harness showed
// it faster than the per-weight default in every cell (docs/notes/qmv_affine.md, v6).
constexpr bool kQmvAffineDefaultIsGrouped = false;

// SWITCH: true makes the ring path's default (qmv_affine_ring_default) the default where it can
// run. It computes the mma default's bits (same K order), so flipping it changes no output,
// only speed: set it after the H200 table of scripts/device/weight_ring.sh shows the ring default
// at or above the mma default in every cell (docs/notes/qmv_affine.md, v8).
constexpr bool kQmvAffineDefaultIsRing = false;

// The stream default: 4 consumer warps (K slices) where K has 4 chunks, fewer below; 8 stages
// of 20 KB, one CTA per SM.
constexpr int kStreamDefaultSlices = 4;
constexpr int kStreamDefaultStages = 8;

// The default's K order comes from the weight shape alone, so it is the same for every row
// count: the largest power-of-two k_slices <= 16 that keeps the launch at most kTargetWarps
// warps (m16 tiles x slices) and every slice at least kMinSliceChunks chunks long. Fitted on
// the H200 sweep (docs/notes/qmv_affine.md): 4096 warps lost 10-20 % to 2048 on
// 4096x14336 and 14336x4096 (short slices, more partials to reduce). Slices of 3 chunks, not
// 4, since the H100 timings of every K split (notes v28; docs/benchmark_results/2026-12-05-h100-4
// k_slices_fit and 2026-12-07-7 call1): 9728 x 896 (7 chunks) was left unsplit, 1.29-1.36x
// the fastest split at one row; at 2 slices it is 1.10-1.12x there, and PyTorch's int4 kernel's
// lead on it fell from 1.29-1.32x to 1.09-1.10x. 2560 warps moved 17920 x 1536 to 2 slices too,
// which the second run timed 1.06-1.13x slower at one row than one slice, so the target stays.
// Under that, the family's fill floor (split_k_fill_slices), down to slices of one chunk
// (896 x 896 at 4 bits: 14 CTAs of 4 warps unsplit).
constexpr int kTargetWarps = 2048;
constexpr int kMaxDefaultSlices = 16;
constexpr int kMinSliceChunks = 3;

// Past 8 rows: the weight size under which the default runs the rows in groups, one m16 tile
// per warp (qmv_affine_default).
constexpr double kSmallWeightBytes = 8e6;
constexpr int kSmallWeightMaxK = 1536;
// Up to 8 rows: the packed weight size from which the factored default (int4, one group a chunk)
// takes two m16 tiles a warp (qmv_affine_default).
constexpr double kFactoredTwoTileBytes = 20e6;

// At one K slice the register pipeline's default CTA is one warp. A K-unsplit launch is a
// matrix of more than 16384 rows (default_k_slices), so it has CTAs to spare, and four-warp CTAs
// leave some SMs twice the warps of others: 28672 x 4096 at 16 rows was 224 CTAs for 132 SMs.
// Timed cold on an H100 against the same config at four warps, int4 g64 and g128
// (docs/benchmark_results/2026-12-06-h100-7, call1, the mean of two rounds): 0.924 and 0.971 of
// the time at 16 rows, 0.930 and 0.932 at 32, 0.973 and 0.954 at 8. This default against the one
// before (call2): 0.925-0.941 at 16-32 rows on 28672 x 4096, 0.975-0.979 at 8, 0.991-1.003 at
// rows 1-4. The warps of a CTA do not change the K order, so the bits are the same.
constexpr int kOneSliceWarps = 1;
void one_slice_cta(QmvAffineConfig &c) {
  if (c.warps_k == 1 && c.split_k == 1)
    c.warps = kOneSliceWarps;
}

int default_k_slices(int n, int k, int bits) {
  const int tiles = (n + 15) / 16;
  const int chunk_k = qmv_affine_chunk_k(bits);
  const int chunks = (k + chunk_k - 1) / chunk_k;
  int slices = 1;
  while (slices < kMaxDefaultSlices && 2 * slices * tiles <= kTargetWarps &&
         2 * slices * kMinSliceChunks <= chunks)
    slices *= 2;
  return std::max(slices, split_k_fill_slices(tiles, chunk_k, k, kMaxDefaultSlices));
}

// The ring default's shape at `slices` K slices: 16 consumers where a warp holds one m16 and one
// n8 tile (8 activation rows per CTA), 8 with more.
QmvAffineConfig ring_config(int rows, int bits, int slices) {
  return ring_default_shape(QmvAffineConfig{}, rows, slices, 8, qmv_affine_chunk_k(bits));
}

} // namespace

Tactic QmvAffineConfig::to_tactic() const {
  if (path == KernelPath::stream || path == KernelPath::ring) {
    const int own[] = {stages, ctas_per_sm};
    const Tactic t = split_k_tactic(path == KernelPath::ring ? kRingKernel : kStreamKernel, *this,
                                    kStreamFields, own);
    return path == KernelPath::ring ? with_ring_step(t, *this) : t;
  }
  Tactic t =
      split_k_tactic(path == KernelPath::grouped ? kGroupedKernel : kMmaKernel, *this, {}, {});
  if (path == KernelPath::mma && ahead > 0)
    t.params.emplace_back(kAheadField, ahead);
  if (path == KernelPath::mma && deep > 0)
    t.params.emplace_back(kDeepField, deep);
  if (path == KernelPath::mma && shallow > 0)
    t.params.emplace_back(kShallowField, shallow);
  return t;
}

QmvAffineConfig QmvAffineConfig::from_tactic(const Tactic &tactic) {
  QmvAffineConfig c;
  if (tactic.kernel == kStreamKernel || tactic.kernel == kRingKernel) {
    c.path = tactic.kernel == kRingKernel ? KernelPath::ring : KernelPath::stream;
    const std::vector<int> own = parse_split_k_tactic(
        c.path == KernelPath::ring ? take_ring_step(tactic, c) : tactic, kStreamFields, c);
    c.stages = own[0];
    c.ctas_per_sm = own[1];
    return c;
  }
  if (tactic.kernel != kMmaKernel && tactic.kernel != kGroupedKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a qmv.affine config (kernel " +
                          kMmaKernel + ", " + kGroupedKernel + ", " + kStreamKernel + " or " +
                          kRingKernel + ")");
  c.path = tactic.kernel == kGroupedKernel ? KernelPath::grouped : KernelPath::mma;
  Tactic rest = tactic;
  if (c.path == KernelPath::mma) {
    rest = take_last_power_field(rest, kShallowField, "chunks", &c.shallow);
    if (c.shallow != 0 && c.shallow != 2 && c.shallow != 4)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': shallow=" + std::to_string(c.shallow) +
                            " is not compiled (shallow=2 or 4: chunks a warp holds at once)");
    rest = take_last_power_field(rest, kDeepField, "blocks", &c.deep);
    if (c.deep != 0 && c.deep != 2)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': deep=" + std::to_string(c.deep) +
                            " is not compiled (deep=2: two blocks of words ahead)");
    rest = take_last_power_field(rest, kAheadField, "chunks", &c.ahead);
  }
  parse_split_k_tactic(rest, {}, c);
  return c;
}

QmvAffineConfig qmv_affine_stream_default(int rows, int /*n*/, int k, int bits, int /*group*/) {
  QmvAffineConfig c;
  c.path = KernelPath::stream;
  c.rows_per_cta = rows <= 8 ? 8 : rows <= 16 ? 16 : 32;
  c.outputs_per_warp = 16;
  const int chunk_k = qmv_affine_chunk_k(bits);
  int slices = kStreamDefaultSlices;
  while (slices > 1 && slices > (k + chunk_k - 1) / chunk_k)
    slices /= 2;
  c.warps = slices;
  c.warps_k = slices;
  c.split_k = 1;
  c.async = 0;
  c.stages = kStreamDefaultStages;
  c.ctas_per_sm = 1;
  return c;
}

QmvAffineConfig qmv_affine_grouped_default(int rows, int n, int k, int /*bits*/, int group) {
  QmvAffineConfig c;
  c.path = KernelPath::grouped;
  // Rows 1-4 in one spread tile at g64 (4 rows x 2 groups of 8 columns); more rows run as more
  // row groups of 4 (g32: two spread tiles) or 8 (g64, g128: two spread tiles or one).
  c.rows_per_cta = rows <= 4 || group == 32 ? 4 : 8;
  c.outputs_per_warp = 16;
  c.async = 0;
  // The grouped kernels take at most 256 threads: cluster pairs split K at 8 and 16 slices.
  set_default_cta(c, default_k_slices(n, k, 4), 2, /*pair_at_8=*/true, /*pair_at_16=*/true);
  return c;
}

QmvAffineConfig qmv_affine_ring_default(int rows, int n, int k, int bits, int /*group*/) {
  return ring_config(rows, bits, default_k_slices(n, k, bits));
}

std::optional<QmvAffineConfig> qmv_affine_ring_twin(const QmvAffineConfig &config, int rows, int n,
                                                    int k, int bits, int group) {
  if (config.path == KernelPath::ring)
    return config;
  if (config.path != KernelPath::mma)
    return std::nullopt;
  const QmvAffineConfig c = ring_config(rows, bits, qmv_affine_k_slices(config));
  if (!qmv_affine_can_implement(c, rows, n, k, bits, group, nullptr))
    return std::nullopt;
  return c;
}

namespace {
// `c` at its slot's J = 2 kernel (`ahead=2`: the same K order, so the same bits) where one is
// compiled that runs the shape.
std::optional<QmvAffineConfig> at_ahead_2(QmvAffineConfig c, int rows, int n, int k, int bits,
                                          int group) {
  c.ahead = 2;
  if (qmv_affine_can_implement(c, rows, n, k, bits, group, nullptr))
    return c;
  return std::nullopt;
}
} // namespace

QmvAffineConfig qmv_affine_default(int rows, int n, int k, int bits, int group) {
  if (kQmvAffineDefaultIsRing && k % qmv_affine_chunk_k(bits) == 0) {
    // The ring default where it can run (K a multiple of the chunk, its k_slices within the
    // kernel's consumers); the mma default's bits either way.
    const QmvAffineConfig c = qmv_affine_ring_default(rows, n, k, bits, group);
    if (qmv_affine_can_implement(c, rows, n, k, bits, group, nullptr))
      return c;
  }
  if constexpr (kQmvAffineDefaultIsStream)
    return qmv_affine_stream_default(rows, n, k, bits, group);
  if (kQmvAffineDefaultIsGrouped && bits == 4 && k % 128 == 0)
    return qmv_affine_grouped_default(rows, n, k, bits, group);
  QmvAffineConfig c;
  c.path = KernelPath::mma;
  const int slices = default_k_slices(n, k, bits);
  // Up to 8 rows: one 8-row tile.
  if (rows <= 8) {
    c.rows_per_cta = 8;
    c.outputs_per_warp = 16;
    set_default_cta(c, slices, 2, /*pair_at_8=*/false, /*pair_at_16=*/false);
    one_slice_cta(c);
    // int4 g64 with at most 8 K slices: the slot's J = 2 kernel (`ahead=2`, the same K order
    // and bits), whose register pipeline reads a row's parameters for both chunks in one vector
    // load where each slice's chunks come in pairs (kQmvParameterVectors). On the H200 it took
    // 0.90-0.94 of the J = 1 kernel's time on 28672 x 4096 and 0.96-0.99 on 6144 x 4096 at rows
    // 1-8, and at 8 slices (4096 x 4096, 4096 x 14336) 1.01-1.02 at some row counts
    // (docs/benchmark_results/2026-12-06-h200, call1, the harness then partly warm). Timed cold
    // as the tuner times (8 x the L2, parameters cold) on an H100, the 8-slice shapes took
    // 0.83-0.88 (4096 x 14336) and 0.93-0.96 (4096 x 4096) of the J = 1 kernel's time at rows
    // 1 / 4 / 8 in all five tables of one call (docs/benchmark_results/2026-12-06-h100-5, call1).
    if (kQmvParameterVectors && bits == 4 && group == 64 && slices <= 8 &&
        (k / qmv_affine_chunk_k(bits)) % (2 * slices) == 0)
      if (const auto a = at_ahead_2(c, rows, n, k, bits, group))
        return *a;
    // int4 with one group a chunk (factored, group 128) on weights of kFactoredTwoTileBytes or
    // more: two m16 tiles a warp (the slot of J 2 chunks; the same K order, so the same bits).
    // Timed cold on an H100 against the one-tile CTA of the same K slices
    // (docs/benchmark_results/2026-12-06-h100-7, call2 at rows 1 / 4 / 8, the mean of two rounds):
    // 0.943 / 0.963 / 0.968 on 28672 x 4096 (58.7 MB), 0.978 / 0.969 / 0.965 on 4096 x 14336
    // (29.4 MB); at 8 rows (call1) 1.063 on 6144 x 4096 (12.6 MB) and 1.002 on 4096 x 4096.
    if (bits == 4 && group >= qmv_affine_chunk_k(bits) &&
        static_cast<double>(n) * k * bits / 8 >= kFactoredTwoTileBytes) {
      QmvAffineConfig t = c;
      t.outputs_per_warp = 32;
      if (qmv_affine_can_implement(t, rows, n, k, bits, group, nullptr))
        return t;
    }
    return c;
  }
  // Past 8 rows, by weight size (the same K order, so the same bits, either way). Fitted on the
  // triage medians of the H100 tunes of issue 13's matrix (docs/notes/qmv_affine.md, v10), where
  // the v9 default below cost 1.44x (rows 9-16) and 1.47x (17-32) the fastest config of its
  // order, geomean over 45 buckets each, and this one 1.09x and 1.10x:
  // - small matrices (packed weights under kSmallWeightBytes, or K of at most
  //   kSmallWeightMaxK): one m16 tile per warp, the rows in groups (8 rows a CTA at 9-16, 16 at
  //   17-32), each group re-reading the weights from L2: warps, not reuse, are what they lack;
  // - larger ones: two m16 tiles per warp (activation loads shared by 32 weight rows) over all
  //   the rows in one CTA (16, or 32).
  // Neither used the cp.async kernels, which lost to the register pipeline at both sizes before
  // they staged the group parameters (int4 g64 below).
  if (slices < 16) {
    const bool small =
        static_cast<double>(n) * k * bits / 8 < kSmallWeightBytes || k <= kSmallWeightMaxK;
    const bool upto16 = rows <= 16;
    QmvAffineConfig f = c;
    f.rows_per_cta = small ? (upto16 ? 8 : 16) : (upto16 ? 16 : 32);
    f.outputs_per_warp = small ? 16 : 32;
    set_default_cta(f, slices, 2, /*pair_at_8=*/false, /*pair_at_16=*/false);
    one_slice_cta(f);
    // The 16-row two-m16 CTA at 4 bits with slices of 12 chunks or more: its slot's J = 2
    // kernel (`ahead=2`, the same K order and bits). Timed cold (8 x the L2, parameters cold) on
    // an H100 beside the J = 1 kernel, int4 g64 and g128 at rows 12 and 16, the four
    // Llama-3.1-8B linears (docs/benchmark_results/2026-12-06-h100-6): 0.926-0.996 of its time
    // at 32 chunks a slice (28672 x 4096) and 0.933-0.950 at 14 (4096 x 14336); at 8 chunks
    // (6144 x 4096) 0.958-0.959 at g128 but 1.006-1.007 at g64, and at 4 (4096 x 4096)
    // 1.001-1.003.
    if (bits == 4 && f.rows_per_cta == 16 && f.outputs_per_warp == 32 &&
        qmv_affine_slice_chunks(f, k, bits) >= 12)
      if (const auto a = at_ahead_2(f, rows, n, k, bits, group))
        return *a;
    // Otherwise, int4 g64 per weight with two m16 tiles and slices of an even 4 chunks or more:
    // the slot's cp.async kernel (`async=1`, bit-identical), which stages the slice's group
    // parameters in shared memory there (staged_words in qmv_affine.cu). Timed cold on an H100
    // against the register pipeline of the same CTA (docs/benchmark_results/2026-12-06-h100-7,
    // the mean of two rounds): at 16 rows 0.908 (4096 x 4096) and 0.941 (6144 x 4096), at 32
    // rows 0.873 (4096 x 14336), 0.936, 0.946 and, at one warp on 28672 x 4096, 0.975. At g128
    // (factored, nothing staged) the cp.async kernels took 1.004-1.175.
    const int slice_chunks = qmv_affine_slice_chunks(f, k, bits);
    if (bits == 4 && group == 64 && f.outputs_per_warp == 32 && slice_chunks >= 4 &&
        slice_chunks % 2 == 0) {
      QmvAffineConfig a = f;
      a.async = 1;
      if (qmv_affine_can_implement(a, rows, n, k, bits, group, nullptr))
        return a;
    }
    if (qmv_affine_can_implement(f, rows, n, k, bits, group, nullptr))
      return f;
  }
  // v9, and where the above has no compiled kernel (16 K slices): 16-row CTAs with two m16 tiles
  // per warp and the cp.async ring; 17-32 rows run as two row groups. The ring kernel's CTAs
  // split K in cluster pairs at 8 and 16 slices.
  c.rows_per_cta = 16;
  c.outputs_per_warp = 32;
  c.async = 1;
  set_default_cta(c, slices, 4, /*pair_at_8=*/true, /*pair_at_16=*/true);
  return c;
}

bool qmv_affine_can_implement(const QmvAffineConfig &config, int rows, int n, int k, int bits,
                              int group, std::string *reason) {
  if (rows < 1 || rows > 32)
    return refuse(reason, "rows=" + std::to_string(rows) + " outside 1..32");
  if (n < 1)
    return refuse(reason, "n=" + std::to_string(n) + " must be positive");
  if (bits != 4 && bits != 8)
    return refuse(reason, "bits=" + std::to_string(bits) + " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    return refuse(reason, "group=" + std::to_string(group) + " is not 32, 64 or 128");
  if (k < group || k % group != 0)
    return refuse(reason, "k=" + std::to_string(k) +
                              " is not a positive multiple of group=" + std::to_string(group));
  if (!qmv_affine_offsets_fit(n, k, bits))
    return refuse(reason, "n=" + std::to_string(n) + " x k=" + std::to_string(k) + " at " +
                              std::to_string(bits) +
                              " bits is 2^31 or more packed words (32-bit offsets)");
  if (!is_compiled(config, qmv_affine_configs(bits)))
    return refuse(reason, "not a compiled qmv.affine config for bits=" + std::to_string(bits));
  const int chunk_k = qmv_affine_chunk_k(bits);
  const int chunks = (k + chunk_k - 1) / chunk_k;
  // More slices than chunks only where they still shorten the slices: one chunk a slice at the
  // power of two above the chunk count (8 slices on K = 896's 7 chunks, the last one empty),
  // which halves a warp's serial work on the matrices where one or two warps a scheduler leave
  // it unhidden (docs/notes/qmv_affine.md, v27). At twice the chunks or more a slice is a chunk
  // either way. The mma path's kernels alone run empty slices: the ring and stream kernels
  // failed on them on an H100 (2026-12-07-7 call1: 16 slices on 9 chunks, 4 on 3), and the
  // grouped kernels were never run so, so those paths keep a slice to every chunk.
  const int slices = qmv_affine_k_slices(config);
  if (slices >= 2 * chunks)
    return refuse(reason, "k_slices=" + std::to_string(slices) + " is twice the " +
                              std::to_string(chunks) + " " + std::to_string(chunk_k) +
                              "-value K chunks or more (slices of one chunk at half of it)");
  if (config.path != KernelPath::mma && slices > chunks)
    return refuse(reason, "k_slices=" + std::to_string(slices) + " is more than the " +
                              std::to_string(chunks) + " " + std::to_string(chunk_k) +
                              "-value K chunks (only the mma path runs empty slices)");
  if (config.path == KernelPath::grouped) {
    if (bits != 4)
      return refuse(reason, "the grouped path is 4 bits only");
    if (k % 128 != 0)
      return refuse(reason, "k=" + std::to_string(k) +
                                " is not a multiple of 128 (the grouped path's chunk)");
    const int tiles = config.rows_per_cta * (128 / group) / 8;
    if (tiles > 2)
      return refuse(reason, "rows_per_cta=" + std::to_string(config.rows_per_cta) + " x " +
                                std::to_string(128 / group) + " groups per chunk needs " +
                                std::to_string(tiles) + " spread n8 tiles (2 compiled)");
    if (config.rows_per_cta > 4 && rows <= 4)
      return refuse(reason, "rows_per_cta=" + std::to_string(config.rows_per_cta) +
                                " pads rows=" + std::to_string(rows) + " to more than twice");
    return true;
  }
  if (config.path == KernelPath::ring) {
    if (k % chunk_k != 0)
      return refuse(reason, "k=" + std::to_string(k) + " is not a multiple of " +
                                std::to_string(chunk_k) + " (the ring path's " +
                                std::to_string(bits) + "-bit chunk)");
    return weights_once_rows_fit(config, rows, "ring", reason);
  }
  if (config.path == KernelPath::stream)
    return weights_once_rows_fit(config, rows, "stream", reason);
  if (config.shallow > 0) {
    // The shallow kernel: int4, per weight or one group a chunk (qmv_affine_chunk_groups), one
    // activation tile, slices of 1-2 chunks (shallow=2) or 3-4 (shallow=4).
    if (bits != 4)
      return refuse(reason, "shallow=" + std::to_string(config.shallow) +
                                " is 4 bits only (bits=" + std::to_string(bits) + ")");
    if (qmv_affine_chunk_groups(bits, group, k) == 2)
      return refuse(reason, "shallow: the two-group chunks are not compiled");
    if (rows > 8)
      return refuse(reason, "shallow: rows=" + std::to_string(rows) +
                                " outside 1..8 (one activation tile)");
    // Warps of 8 rows where the 16-row grid of the same k_slices is small: at most
    // 2 x kSplitKFillWarps warps (about 8 an SM of an H100 or H200), where one or two a scheduler
    // leave the dequantisation's chain unhidden; past it they would only add loads of the same
    // activations and more partials to reduce.
    const long long warps16 = (n + 15LL) / 16 * qmv_affine_k_slices(config);
    if (config.outputs_per_warp == 8 && warps16 > 2LL * kSplitKFillWarps)
      return refuse(reason, "shallow: outputs_per_warp=8 where the 16-row grid holds " +
                                std::to_string(warps16) + " warps (at most " +
                                std::to_string(2 * kSplitKFillWarps) + ")");
    const int slice = qmv_affine_slice_chunks(config, k, bits);
    if (!qmv_affine_shallow_slice_fits(config.shallow, slice))
      return refuse(reason, "shallow=" + std::to_string(config.shallow) + ": slices of " +
                                std::to_string(slice) + " chunks (" +
                                (config.shallow == 2 ? "1 to 2" : "3 to 4") + ")");
  }
  if (config.deep > 0) {
    // The DEEP twin stages the group parameters: int4 g64 per weight, whole pairs of chunks a
    // slice and 4 groups a pair (qmv_affine.cu, staged_words), and acts from
    // kQmvAffineDeepMinChunks chunks a slice.
    if (bits != 4 || group != 64)
      return refuse(reason, "deep=" + std::to_string(config.deep) + " is int4 g64 only (bits=" +
                                std::to_string(bits) + ", group=" + std::to_string(group) + ")");
    if (k % (2 * chunk_k) != 0)
      return refuse(reason, "deep: k=" + std::to_string(k) + " is not a multiple of " +
                                std::to_string(2 * chunk_k) + " (pairs of chunks)");
    const int slice = qmv_affine_slice_chunks(config, k, bits);
    if (slice < kQmvAffineDeepMinChunks || slice % 2 != 0)
      return refuse(reason, "deep: slices of " + std::to_string(slice) + " chunks (an even " +
                                std::to_string(kQmvAffineDeepMinChunks) + " or more)");
    if (!qmv_affine_deep_stage_fits(config, k, bits))
      return refuse(reason, "deep: the staged parameters of warps=" +
                                std::to_string(config.warps) + " at slices of " +
                                std::to_string(slice) +
                                " chunks exceed the register pipeline's 48 KB of shared memory");
  }
  return split_k_rows_fit(config, rows, 8, reason);
}

} // namespace hone::cuda

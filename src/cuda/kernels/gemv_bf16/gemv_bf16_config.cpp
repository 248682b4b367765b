// gemv.bf16 host logic: tactic conversion, the static default and can_implement. The compiled
// kernels and the config list are in gemv_bf16.cu.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_ring.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kMmaKernel = "gemv.bf16.mma";
constexpr const char *kFmaKernel = "gemv.bf16.fma";
constexpr const char *kStreamKernel = "gemv.bf16.stream";
constexpr const char *kRingKernel = "gemv.bf16.ring";
constexpr const char *kOwnFields[] = {"vec"}; // after the family's (split_k_tactic)
constexpr const char *kStreamFields[] = {"vec", "stages", "ctas_per_sm"};

// SWITCH: true makes gemv_bf16_default the stream path's default (gemv_bf16_stream_default).
// Flip it only after the H200 sweep of tests/device/gemv_bf16_kernel_test.cu shows the stream
// default at or above the mma default in every cell (docs/notes/gemv_bf16.md, v6).
constexpr bool kGemvBf16DefaultIsStream = false;

// SWITCH: true makes the ring path's default (gemv_bf16_ring_default) the default where it can
// run. It computes the mma default's bits (same K order), so flipping it changes no output, only
// speed: set it after the H200 table of bench/gemv_bf16_harness shows the ring default at or
// above the mma default in every cell (docs/notes/gemv_bf16.md, v8).
constexpr bool kGemvBf16DefaultIsRing = false;

// The stream default: 4 consumer warps (K slices) where K has 4 chunks of 32, fewer below;
// weight tiles of 16 rows (more tiles balance the persistent grid better), 4 stages of 20 KB
// (60 KB in flight per SM), one CTA per SM.
constexpr int kStreamDefaultSlices = 4;
constexpr int kStreamDefaultStages = 4;

// The default's K order comes from the weight shape alone, so it is the same for every row
// count: k_slices = 2^floor(log2(kTargetWarps / m16 tiles)), at most 16, and no slice
// shorter than kMinSliceElements. Fitted on the H200 sweep in docs/notes/gemv_bf16.md.
// Under that, the family's fill floor (split_k_fill_slices), down to slices of one 32-element
// chunk: 896 x 896, held to 2 slices by the minimum slice, took 1.47x the time of its fastest
// 8-slice config over rows 1-32 on the H100 (docs/notes/gemv_bf16.md, "The default's K split").
constexpr int kTargetWarps = 2048;
constexpr int kMaxDefaultSlices = 16;
constexpr int kMinSliceElements = 256;    // [elements of K]
constexpr int kChunkElements = 32;        // the K chunk of every path; a slice holds at least one
constexpr double kSmallWeightBytes = 8e6; // [bytes] of bf16 weights (gemv_bf16_default)

int default_k_slices(int n, int k) {
  const int tiles = (n + 15) / 16;
  int slices = 1;
  while (slices < kMaxDefaultSlices && 2 * slices * tiles <= kTargetWarps)
    slices *= 2;
  while (slices > 1 && slices * kMinSliceElements > k)
    slices /= 2;
  return std::max(slices, split_k_fill_slices(tiles, kChunkElements, k, kMaxDefaultSlices));
}

// The ring default's shape at `slices` K slices: 16 consumers up to 16 activation rows per CTA,
// 8 at 32.
GemvBf16Config ring_config(int rows, int slices) {
  GemvBf16Config base;
  base.vec = 16;
  return ring_default_shape(base, rows, slices, 16, kGemvBf16RingChunkK);
}

} // namespace

Tactic GemvBf16Config::to_tactic() const {
  if (path == KernelPath::stream || path == KernelPath::ring) {
    const int own[] = {vec, stages, ctas_per_sm};
    const Tactic t = split_k_tactic(path == KernelPath::ring ? kRingKernel : kStreamKernel, *this,
                                    kStreamFields, own);
    return path == KernelPath::ring ? with_ring_step(t, *this) : t;
  }
  const int own[] = {vec};
  return split_k_tactic(path == KernelPath::mma ? kMmaKernel : kFmaKernel, *this, kOwnFields, own);
}

GemvBf16Config GemvBf16Config::from_tactic(const Tactic &tactic) {
  GemvBf16Config c;
  if (tactic.kernel == kStreamKernel || tactic.kernel == kRingKernel) {
    c.path = tactic.kernel == kRingKernel ? KernelPath::ring : KernelPath::stream;
    const std::vector<int> own = parse_split_k_tactic(
        c.path == KernelPath::ring ? take_ring_step(tactic, c) : tactic, kStreamFields, c);
    c.vec = own[0];
    c.stages = own[1];
    c.ctas_per_sm = own[2];
    return c;
  }
  if (tactic.kernel == kMmaKernel)
    c.path = KernelPath::mma;
  else if (tactic.kernel == kFmaKernel)
    c.path = KernelPath::fma;
  else
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a gemv.bf16 config (kernel " +
                          kMmaKernel + ", " + kFmaKernel + ", " + kStreamKernel + " or " +
                          kRingKernel + ")");
  c.vec = parse_split_k_tactic(tactic, kOwnFields, c)[0];
  return c;
}

GemvBf16Config gemv_bf16_stream_default(int rows, int n, int k) {
  (void)n;
  GemvBf16Config c;
  c.path = KernelPath::stream;
  c.rows_per_cta = rows <= 8 ? 8 : rows <= 16 ? 16 : 32;
  c.outputs_per_warp = 16;
  int slices = kStreamDefaultSlices;
  while (slices > 1 && slices > (k + 31) / 32)
    slices /= 2;
  c.warps = slices;
  c.warps_k = slices;
  c.split_k = 1;
  c.async = 0;
  c.vec = 16;
  c.stages = kStreamDefaultStages;
  c.ctas_per_sm = 1;
  return c;
}

GemvBf16Config gemv_bf16_ring_default(int rows, int n, int k) {
  return ring_config(rows, default_k_slices(n, k));
}

std::optional<GemvBf16Config> gemv_bf16_ring_twin(const GemvBf16Config &config, int rows, int n,
                                                  int k) {
  if (config.path == KernelPath::ring)
    return config;
  if (config.path != KernelPath::mma)
    return std::nullopt;
  const GemvBf16Config c = ring_config(rows, gemv_bf16_k_slices(config));
  if (!gemv_bf16_can_implement(c, rows, n, k, nullptr))
    return std::nullopt;
  return c;
}

GemvBf16Config gemv_bf16_default(int rows, int n, int k) {
  if (kGemvBf16DefaultIsRing && k % 32 == 0) {
    // The ring default where it can run (K a multiple of 32, its k_slices within the kernel's
    // consumers); the mma default's bits either way.
    const GemvBf16Config c = gemv_bf16_ring_default(rows, n, k);
    if (gemv_bf16_can_implement(c, rows, n, k, nullptr))
      return c;
  }
  if constexpr (kGemvBf16DefaultIsStream)
    return gemv_bf16_stream_default(rows, n, k);
  GemvBf16Config c;
  c.path = KernelPath::mma;
  // 17-32 rows: one 32-row CTA, except on small matrices (weights under kSmallWeightBytes),
  // whose rows run in two groups of 16 (the same K order). Priced on the H100 tunes of issue
  // 13's matrix (docs/notes/gemv_bf16.md, v4): the 32-row CTA cost 1.27-1.57x the fastest
  // config of its order on the five small shapes, the groups of 16 1.03-1.17x.
  const bool small = 2.0 * n * k < kSmallWeightBytes;
  c.rows_per_cta = rows <= 8 ? 8 : rows <= 16 || small ? 16 : 32;
  c.vec = 16;
  const int slices = default_k_slices(n, k);
  // Two m16 tiles per warp halve the activation loads per weight byte; that pays for 9..16
  // rows when the launch keeps enough warps (8+ slices of 512+ elements, or slices of 2048+).
  // The K order is the same either way.
  const int slice_k = k / slices;
  const bool enough_warps = (slices >= 8 && slice_k >= 512) || slice_k >= 2048;
  c.outputs_per_warp = rows > 8 && rows <= 16 && enough_warps ? 32 : 16;
  // The o32 16-row kernel runs short of bytes in flight with its register double buffer
  // (146 registers); its cp.async ring (72 registers) won 6-12 % on the H200 sweep.
  c.async = c.outputs_per_warp == 32 ? 1 : 0;
  // The 16- and 32-row kernels take at most 8 warps; 8 warps of 12 KB rings per CTA lose
  // occupancy, where a cluster pair keeps 4.
  const bool capped = rows > 8;
  set_default_cta(c, slices, rows <= 8 ? 4 : 2, /*pair_at_8=*/c.async != 0,
                  /*pair_at_16=*/capped);
  return c;
}

bool gemv_bf16_can_implement(const GemvBf16Config &config, int rows, int n, int k,
                             std::string *reason) {
  if (rows < 1 || rows > 32)
    return refuse(reason, "rows=" + std::to_string(rows) + " outside 1..32");
  if (n < 1)
    return refuse(reason, "n=" + std::to_string(n) + " must be positive");
  if (k < 8 || k % 8 != 0)
    return refuse(reason, "k=" + std::to_string(k) +
                              " is not a positive multiple of 8 (rows of X and W must be "
                              "16-byte aligned)");
  if (!gemv_bf16_offsets_fit(n, k))
    return refuse(reason, "n=" + std::to_string(n) + " x k=" + std::to_string(k) +
                              " is 2^34 or more elements (32-bit offsets of 16-byte fragments)");
  if (!is_compiled(config, gemv_bf16_configs()))
    return refuse(reason, "not a compiled gemv.bf16 config");
  const int chunks = (k + 31) / 32;
  if (gemv_bf16_k_slices(config) > chunks)
    return refuse(reason, "k_slices=" + std::to_string(gemv_bf16_k_slices(config)) +
                              " exceeds the " + std::to_string(chunks) +
                              " 32-element K chunks (empty slices)");
  if (config.path == KernelPath::ring) {
    if (k % 32 != 0)
      return refuse(reason,
                    "k=" + std::to_string(k) + " is not a multiple of 32 (the ring path's chunk)");
    return weights_once_rows_fit(config, rows, "ring", reason);
  }
  if (config.path == KernelPath::stream)
    return weights_once_rows_fit(config, rows, "stream", reason);
  // Candidate pruning (split_k_rows_fit): the fma path has 1-row CTAs, the mma path 8.
  return split_k_rows_fit(config, rows, config.path == KernelPath::mma ? 8 : 1, reason);
}

size_t gemv_bf16_workspace_bytes(const GemvBf16Config &, int, int, int) {
  // Split-K partials are reduced through the distributed shared memory of a cluster.
  return 0;
}

} // namespace hone::cuda

// qmm.affine host logic: tactic conversion, the static default and can_implement. The kernel
// table, the config list built on it, resources and launch are in qmm_affine.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/qmm_affine/qmm_affine.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kPathKernels[] = {"qmm.affine.wgmma", "qmm.affine.dequant", "qmm.affine.mma"};
// The mma path's kernel name per engine (QmmAffineConfig::engine): the same fields for all.
constexpr const char *kMmaEngineKernels[] = {"qmm.affine.mma", "qmm.affine.mma_wgmma",
                                             "qmm.affine.mma_tma", "qmm.affine.mma_tma_ahead",
                                             "qmm.affine.mma_wgmma_late"};
constexpr int kMmaEngines = static_cast<int>(std::size(kMmaEngineKernels));
constexpr const char *kFieldNames[] = {"tile_m",    "tile_n",   "tile_k", "cluster_m",
                                       "cluster_n", "pingpong", "split_k"};
constexpr const char *kMmaFieldNames[] = {"tile_m", "tile_n", "tile_k",
                                          "stages", "warps",  "split_k"};
constexpr const char *kStreamKField = "stream_k";

// The default splits K only while the data-parallel grid fills less than half of a wave of an
// H100/H200 (132 SMs), and keeps every slice at least kMinSliceTiles K tiles long.
// NOTE: a starting point; the tuner measures every split against it.
constexpr int kDefaultWaveCtas = 132;
constexpr int kMaxDefaultSplit = 4;
constexpr int kMinSliceTiles = 8;

bool fail(std::string *reason, std::string text) {
  if (reason)
    *reason = std::move(text);
  return false;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

bool is_compiled(const QmmAffineConfig &c, int bits) {
  const std::vector<QmmAffineConfig> &all = qmm_affine_configs(bits);
  return std::find(all.begin(), all.end(), c) != all.end();
}

} // namespace

Tactic QmmAffineConfig::to_tactic() const {
  if (path == kQmmMmaPath)
    return config_tactic(kMmaEngineKernels[engine >= 0 && engine < kMmaEngines ? engine : 0],
                         kMmaFieldNames, {{tile_m, tile_n, tile_k, stages, warps, split_k}},
                         kStreamKField, stream_k);
  return config_tactic(kPathKernels[path == 1 ? 1 : 0], kFieldNames,
                       {{tile_m, tile_n, tile_k, cluster_m, cluster_n, pingpong, split_k}},
                       kStreamKField, stream_k);
}

QmmAffineConfig QmmAffineConfig::from_tactic(const Tactic &tactic) {
  QmmAffineConfig c;
  const auto *engine =
      std::find(std::begin(kMmaEngineKernels), std::end(kMmaEngineKernels), tactic.kernel);
  if (tactic.kernel == kPathKernels[0])
    c.path = 0;
  else if (tactic.kernel == kPathKernels[1])
    c.path = 1;
  else if (engine != std::end(kMmaEngineKernels)) {
    const std::vector<int> v = config_fields(tactic, kMmaFieldNames, kStreamKField, &c.stream_k);
    c.path = kQmmMmaPath;
    c.engine = static_cast<int>(engine - std::begin(kMmaEngineKernels));
    c.tile_m = v[0];
    c.tile_n = v[1];
    c.tile_k = v[2];
    c.stages = v[3];
    c.warps = v[4];
    c.split_k = v[5];
    return c;
  } else {
    std::string kernels = std::string(kPathKernels[0]) + ", " + kPathKernels[1];
    for (const char *name : kMmaEngineKernels)
      kernels += std::string(", ") + name;
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() +
                          "' is not a qmm.affine config (kernel one of " + kernels + ")");
  }
  const std::vector<int> v = config_fields(tactic, kFieldNames, kStreamKField, &c.stream_k);
  c.tile_m = v[0];
  c.tile_n = v[1];
  c.tile_k = v[2];
  c.cluster_m = v[3];
  c.cluster_n = v[4];
  c.pingpong = v[5];
  c.split_k = v[6];
  return c;
}

bool QmmAffineConfig::same_kernel(const QmmAffineConfig &o) const {
  return path == o.path && tile_m == o.tile_m && tile_n == o.tile_n && tile_k == o.tile_k &&
         cluster_m == o.cluster_m && cluster_n == o.cluster_n && pingpong == o.pingpong &&
         stages == o.stages && warps == o.warps && engine == o.engine;
}

QmmAffineConfig qmm_affine_default(int m, int n, int k, int bits, int group) {
  // The wgmma path where a compiled tile K divides the group (else dequant: group 32),
  // cooperative, no cluster, tile K nearest 64, and the activation tile nearest to m between 64
  // and 256 (in log distance): a wgmma N below 64 idles the tensor cores on the
  // dequantisation, and m >= 128 wants the largest tile that the registers hold.
  const std::vector<QmmAffineConfig> &all = qmm_affine_configs(bits);
  HONE_CHECK(!all.empty(), "qmm.affine: no kernels compiled into this build");
  const double want_m = std::log2(std::clamp(m, 64, 256));
  const QmmAffineConfig *best = nullptr;
  double best_score = 0;
  for (const QmmAffineConfig &c : all) {
    if (c.path == kQmmMmaPath || c.split_k != 1 || c.stream_k != 0 || c.cluster_m != 1 ||
        c.cluster_n != 1 || (c.path == 0 && group % c.tile_k != 0))
      continue;
    // Lower is better: the path first, then tile M distance, then the schedule, then tile K
    // nearest 64, then tile N nearest 128.
    const double score = 1000.0 * c.path + 100.0 * std::abs(std::log2(c.tile_m) - want_m) +
                         10.0 * c.pingpong + std::abs(std::log2(c.tile_k) - 6.0) +
                         0.1 * std::abs(std::log2(c.tile_n) - 7.0);
    if (!best || score < best_score)
      best = &c, best_score = score;
  }
  if (!best) // no compiled tile K divides the group: can_implement names the problem
    return all.front();
  // NOTE: the mma path is never the default (a tuning candidate); with no CUTLASS kernel in the
  // build the loop above finds nothing and the first mma config stands in.
  QmmAffineConfig c = *best;
  if (c.pingpong == 0) {
    const int tiles = ceil_div(m, c.tile_m) * ceil_div(n, c.tile_n);
    const int k_tiles = ceil_div(k, c.tile_k);
    int split = 1;
    while (2 * split <= kMaxDefaultSplit && 2 * tiles * split <= kDefaultWaveCtas &&
           k_tiles >= 2 * split * kMinSliceTiles) {
      QmmAffineConfig s = c;
      s.split_k = 2 * split;
      if (!is_compiled(s, bits))
        break;
      split *= 2;
    }
    c.split_k = split;
  }
  return c;
}

bool qmm_affine_can_implement(const QmmAffineConfig &config, int m, int n, int k, int bits,
                              int group, std::string *reason) {
  if (!qmm_affine_built())
    return fail(reason, "this build has no qmm.affine kernels (CUTLASS headers not found when "
                        "it was configured)");
  if (m < 1)
    return fail(reason, "m=" + std::to_string(m) + " must be positive");
  if (n < 8 || n % 8 != 0)
    return fail(reason, "n=" + std::to_string(n) +
                            " is not a positive multiple of 8 (TMA: 16-byte rows of Y and of "
                            "the transposed group parameters)");
  if (bits != 4 && bits != 8)
    return fail(reason, "bits=" + std::to_string(bits) + " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    return fail(reason, "group=" + std::to_string(group) + " is not 32, 64 or 128");
  if (k < group || k % group != 0)
    return fail(reason, "k=" + std::to_string(k) +
                            " is not a positive multiple of group=" + std::to_string(group));
  if (!is_compiled(config, bits))
    return fail(reason, "not a compiled qmm.affine config for bits=" + std::to_string(bits) +
                            " (compiled tiles MxNxK: " + qmm_affine_tile_list(bits) + ")");
  if (config.path == kQmmMmaPath) {
    if (bits != 4)
      return fail(reason, "the mma path takes bits=4 only, got bits=" + std::to_string(bits));
    const int tile_k = config.tile_k;
    if (k % tile_k != 0)
      return fail(reason, "k=" + std::to_string(k) + " is not a multiple of tile_k=" +
                              std::to_string(tile_k) + " (the mma path's K block)");
    if (config.stream_k && k / tile_k < 2)
      return fail(reason, "stream_k needs at least 2 K blocks, k=" + std::to_string(k) + " has " +
                              std::to_string(k / tile_k));
    if (config.split_k > kQmmMmaMaxSplit || config.split_k > k / tile_k)
      return fail(reason, "split_k=" + std::to_string(config.split_k) +
                              " exceeds the mma path's limit (" + std::to_string(kQmmMmaMaxSplit) +
                              " CTAs per cluster, at most " + std::to_string(k / tile_k) +
                              " K blocks)");
    if (qmm_engine_is_tma(config.engine) && (k / group) % 8 != 0)
      return fail(reason, "k / group = " + std::to_string(k / group) +
                              " is not a multiple of 8: the TMA engine copies each row's group "
                              "parameters in 16-byte windows (its tensor map's row pitch)");
    if ((k / group) % 2 != 0)
      return fail(reason, "k / group = " + std::to_string(k / group) +
                              " is odd: the mma path copies each row's group parameters in "
                              "aligned pairs");
    if (!qmm_mma_params_fit(tile_k, k, group))
      return fail(reason,
                  "tile_k=" + std::to_string(tile_k) + " spans " + std::to_string(tile_k / group) +
                      " groups of " + std::to_string(group) + ", more than the " +
                      std::to_string(qmm_mma_param_bytes(k, group) / 2) +
                      "-group parameter window that k / group = " + std::to_string(k / group) +
                      " allows");
    if (static_cast<int64_t>(n) * (k / group) >= (int64_t{1} << 31))
      return fail(reason,
                  "n x k / group = " + std::to_string(static_cast<int64_t>(n) * (k / group)) +
                      " group parameters exceed the mma path's 32-bit offsets");
    return true;
  }
  if (config.path == 0 && group % config.tile_k != 0)
    return fail(reason, "tile_k=" + std::to_string(config.tile_k) +
                            " does not divide group=" + std::to_string(group) +
                            " (the wgmma path takes one scale per K tile; the dequant path "
                            "serves this group)");
  const int k_tiles = ceil_div(k, config.tile_k);
  if (config.split_k > k_tiles)
    return fail(reason, "split_k=" + std::to_string(config.split_k) + " exceeds the " +
                            std::to_string(k_tiles) + " K tiles (empty slices)");
  if (config.stream_k && k_tiles < 2)
    return fail(reason, "stream_k needs at least 2 K tiles, k=" + std::to_string(k) + " has " +
                            std::to_string(k_tiles));
  return true;
}

} // namespace hone::cuda

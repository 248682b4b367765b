// qmv.affine host logic: tactic conversion, the static default and can_implement. The
// compiled kernels and the config list are in qmv_affine.cu.
#include <string>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kMmaKernel = "qmv.affine.mma";

// The default's K order comes from the weight shape alone, so it is the same for every row
// count: the largest power-of-two k_slices <= 16 that keeps the launch at most kTargetWarps
// warps (m16 tiles x slices) and every slice at least kMinSliceChunks chunks long. Fitted on
// the H200 sweep (docs/notes/qmv_affine.md): 4096 warps lost 10-20 % to 2048 on
// 4096x14336 and 14336x4096 (short slices, more partials to reduce).
constexpr int kTargetWarps = 2048;
constexpr int kMaxDefaultSlices = 16;
constexpr int kMinSliceChunks = 4;

int default_k_slices(int n, int k, int bits) {
  const int tiles = (n + 15) / 16;
  const int chunk_k = qmv_affine_chunk_k(bits);
  const int chunks = (k + chunk_k - 1) / chunk_k;
  int slices = 1;
  while (slices < kMaxDefaultSlices && 2 * slices * tiles <= kTargetWarps &&
         2 * slices * kMinSliceChunks <= chunks)
    slices *= 2;
  return slices;
}

} // namespace

Tactic QmvAffineConfig::to_tactic() const { return split_k_tactic(kMmaKernel, *this, {}, {}); }

QmvAffineConfig QmvAffineConfig::from_tactic(const Tactic &tactic) {
  if (tactic.kernel != kMmaKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a qmv.affine config (kernel " +
                          kMmaKernel + ")");
  QmvAffineConfig c;
  c.path = KernelPath::mma;
  parse_split_k_tactic(tactic, {}, c);
  return c;
}

QmvAffineConfig qmv_affine_default(int rows, int n, int k, int bits, int /*group*/) {
  QmvAffineConfig c;
  c.path = KernelPath::mma;
  // Up to 8 rows: one 8-row tile. Past 8: 16-row CTAs with two m16 tiles per warp (X loads
  // shared by 32 weight rows) and the cp.async ring; 17-32 rows run as two row groups, the
  // second re-reading the packed weights from L2, which beat the 32-row kernel on the sweep.
  const bool few = rows <= 8;
  c.rows_per_cta = few ? 8 : 16;
  c.outputs_per_warp = few ? 16 : 32;
  c.async = few ? 0 : 1;
  // Past 8 rows the ring kernel's CTAs split K in cluster pairs at 8 and 16 slices.
  set_default_cta(c, default_k_slices(n, k, bits), few ? 2 : 4, /*pair_at_8=*/!few,
                  /*pair_at_16=*/!few);
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
  if (!is_compiled(config, qmv_affine_configs(bits)))
    return refuse(reason, "not a compiled qmv.affine config for bits=" + std::to_string(bits));
  const int chunk_k = qmv_affine_chunk_k(bits);
  const int chunks = (k + chunk_k - 1) / chunk_k;
  if (qmv_affine_k_slices(config) > chunks)
    return refuse(reason, "k_slices=" + std::to_string(qmv_affine_k_slices(config)) +
                              " exceeds the " + std::to_string(chunks) + " " +
                              std::to_string(chunk_k) + "-value K chunks (empty slices)");
  return split_k_rows_fit(config, rows, 8, reason);
}

} // namespace hone::cuda

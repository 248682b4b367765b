// rope host logic: tactic spelling, the frequencies, the static default and can_implement.
// Kernels and the config list: rope.cu.
#include <cmath>
#include <numbers>
#include <string>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/rope/rope.h"
#include "hone/error.h"
#include "hone/number_format.h"

namespace hone::cuda {

namespace {

constexpr const char *kKernel = "rope.neox";
constexpr const char *kFields[] = {"vec", "threads"};

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

Tactic RopeConfig::to_tactic() const {
  const int values[] = {vec, threads};
  return config_tactic(kKernel, kFields, values, "", 0);
}

RopeConfig RopeConfig::from_tactic(const Tactic &tactic) {
  if (tactic.kernel != kKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a rope config (kernel " + kKernel +
                          ")");
  int unused = 0;
  const std::vector<int> v = config_fields(tactic, kFields, "", &unused);
  RopeConfig c{v[0], v[1]};
  if (c.vec != 4 && c.vec != 8)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': vec=" + str(c.vec) + " is not 4 or 8");
  if (c.threads != 64 && c.threads != 128 && c.threads != 256)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': threads=" + str(c.threads) +
                          " is not 64, 128 or 256");
  return c;
}

std::vector<double> rope_inv_freq(const RopeFrequencies &f, int head_dim) {
  if (!(f.theta > 1.0) || !std::isfinite(f.theta))
    HONE_INVALID_ARGUMENT("rope: theta=" + format_g(f.theta) + " is not a finite value above 1");
  if (head_dim < 2 || head_dim % 2 != 0 || head_dim > kRopeMaxHeadDim)
    HONE_INVALID_ARGUMENT("rope: head_dim=" + str(head_dim) + " is not even in 2.." +
                          str(kRopeMaxHeadDim));
  const bool llama3 = f.llama3_factor != 0;
  if (llama3 && (!(f.llama3_factor >= 1.0) || !(f.llama3_low_freq_factor > 0) ||
                 !(f.llama3_high_freq_factor > f.llama3_low_freq_factor) ||
                 !(f.llama3_original_max_positions > 0)))
    HONE_INVALID_ARGUMENT(
        "rope: llama3 scaling factor=" + format_g(f.llama3_factor) +
        ", low_freq_factor=" + format_g(f.llama3_low_freq_factor) +
        ", high_freq_factor=" + format_g(f.llama3_high_freq_factor) +
        ", original_max_position_embeddings=" + format_g(f.llama3_original_max_positions) +
        " (needs factor >= 1, 0 < low < high, original > 0)");
  std::vector<double> inv(static_cast<size_t>(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    double x = std::pow(f.theta, -2.0 * i / head_dim);
    if (llama3) {
      // transformers' _compute_llama3_parameters, in float64.
      const double low_wavelen = f.llama3_original_max_positions / f.llama3_low_freq_factor;
      const double high_wavelen = f.llama3_original_max_positions / f.llama3_high_freq_factor;
      const double wavelen = 2 * std::numbers::pi / x;
      if (wavelen > low_wavelen) {
        x /= f.llama3_factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (f.llama3_original_max_positions / wavelen - f.llama3_low_freq_factor) /
            (f.llama3_high_freq_factor - f.llama3_low_freq_factor);
        x = (1 - smooth) * x / f.llama3_factor + smooth * x;
      }
    }
    inv[static_cast<size_t>(i)] = x;
  }
  return inv;
}

RopeConfig rope_default(int rows, int hq, int hkv, int head_dim) {
  (void)rows;
  (void)hq;
  (void)hkv;
  // 16-byte vectors where a half row holds one; 128 threads.
  RopeConfig c;
  c.vec = (head_dim / 2) % 8 == 0 ? 8 : 4;
  c.threads = 128;
  return c;
}

bool rope_can_implement(const RopeConfig &config, int rows, int hq, int hkv, int head_dim,
                        std::string *reason) {
  if (rows < 1 || hq < 1 || hkv < 1)
    return refuse(reason, "rows=" + str(rows) + ", hq=" + str(hq) + ", hkv=" + str(hkv) +
                              ": all must be >= 1");
  if (head_dim < 8 || head_dim > kRopeMaxHeadDim || head_dim % 8 != 0)
    return refuse(reason, "head_dim=" + str(head_dim) + " is not a multiple of 8 in 8.." +
                              str(kRopeMaxHeadDim));
  if ((head_dim / 2) % config.vec != 0)
    return refuse(reason, "head_dim / 2=" + str(head_dim / 2) +
                              " is not a multiple of vec=" + str(config.vec));
  bool compiled = false;
  for (const RopeConfig &c : rope_configs())
    compiled = compiled || c == config;
  if (!compiled)
    return refuse(reason, "not a compiled rope config");
  return true;
}

} // namespace hone::cuda

// silu_mul host logic: tactic spelling, the static default and can_implement. Kernels and the
// config list: silu_mul.cu.
#include <string>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/silu_mul/silu_mul.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kKernel = "silu_mul.bf16";
constexpr const char *kFields[] = {"vec", "vectors", "threads"};

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

Tactic SiluMulConfig::to_tactic() const {
  const int values[] = {vec, vectors, threads};
  return config_tactic(kKernel, kFields, values, "", 0);
}

SiluMulConfig SiluMulConfig::from_tactic(const Tactic &tactic) {
  if (tactic.kernel != kKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a silu_mul config (kernel " +
                          kKernel + ")");
  int unused = 0;
  const std::vector<int> v = config_fields(tactic, kFields, "", &unused);
  SiluMulConfig c{v[0], v[1], v[2]};
  if (c.vec != 4 && c.vec != 8)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': vec=" + str(c.vec) + " is not 4 or 8");
  if (c.vectors != 1 && c.vectors != 2 && c.vectors != 4)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': vectors=" + str(c.vectors) +
                          " is not 1, 2 or 4");
  if (c.threads != 64 && c.threads != 128 && c.threads != 256 && c.threads != 512)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': threads=" + str(c.threads) +
                          " is not 64, 128, 256 or 512");
  return c;
}

SiluMulConfig silu_mul_default(int rows, int /*inter*/) {
  // 256 threads of one vector each: 8-byte vectors up to 256 rows, 16-byte ones past. Priced
  // on the triage medians of three H200 tunes of Llama-3.1-8B (inter 14336, rows 1-8192;
  // docs/notes/decode_step.md, "silu_mul's default"): the earlier default (128 threads of 16-byte
  // vectors, two a thread from 256K elements) cost 1.10x the fastest config, this one
  // 1.002-1.003x, 15-16 of 18 buckets more than 2 % faster, none slower. Elementwise: every
  // config gives the same bits.
  SiluMulConfig c;
  c.vec = rows <= 256 ? 4 : 8;
  c.vectors = 1;
  c.threads = 256;
  return c;
}

bool silu_mul_can_implement(const SiluMulConfig &config, int rows, int inter, std::string *reason) {
  if (rows < 1)
    return refuse(reason, "rows=" + str(rows) + " is below 1");
  if (inter < 8 || inter % 8 != 0)
    return refuse(reason, "inter=" + str(inter) + " is not a positive multiple of 8");
  bool compiled = false;
  for (const SiluMulConfig &c : silu_mul_configs())
    compiled = compiled || c == config;
  if (!compiled)
    return refuse(reason, "not a compiled silu_mul config");
  // A CTA covers threads x vectors x vec elements of a row; more than twice the row leaves
  // most threads idle (the default is always admitted).
  const int64_t span = static_cast<int64_t>(config.threads) * config.vectors * config.vec;
  if (!(config == silu_mul_default(rows, inter)) && span > 2 * static_cast<int64_t>(inter))
    return refuse(reason, "a CTA spans " + str(span) + " elements, over twice inter=" + str(inter) +
                              " (idle threads)");
  return true;
}

} // namespace hone::cuda

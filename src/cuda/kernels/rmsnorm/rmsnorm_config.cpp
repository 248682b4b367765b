// rmsnorm host logic: tactic spelling, the static default and can_implement. Kernels and the
// config list: rmsnorm.cu.
#include <string>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kKernel = "rmsnorm.bf16";
constexpr const char *kFields[] = {"vec", "threads", "rows_per_cta"};

std::string str(int64_t v) { return std::to_string(v); }

bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

} // namespace

Tactic RmsnormConfig::to_tactic() const {
  const int values[] = {vec, threads, rows_per_cta};
  return config_tactic(kKernel, kFields, values, "", 0);
}

RmsnormConfig RmsnormConfig::from_tactic(const Tactic &tactic) {
  if (tactic.kernel != kKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not an rmsnorm config (kernel " +
                          kKernel + ")");
  int unused = 0;
  const std::vector<int> v = config_fields(tactic, kFields, "", &unused);
  RmsnormConfig c{v[0], v[1], v[2]};
  if (c.vec != 4 && c.vec != 8)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': vec=" + str(c.vec) + " is not 4 or 8");
  if (!pow2(c.threads) || c.threads < 8 || c.threads > kRmsnormMaxThreadsPerCta)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': threads=" + str(c.threads) +
                          " is not a power of two in 8..512");
  if (!pow2(c.rows_per_cta) || c.rows_per_cta > 8)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': rows_per_cta=" + str(c.rows_per_cta) +
                          " is not 1, 2, 4 or 8");
  return c;
}

RmsnormConfig rmsnorm_default(int rows, int hidden) {
  // The order (lanes) follows hidden alone: 16-byte vectors, and the fewest threads per row that
  // keep at most 4 vectors per thread (a row of 4096 takes 128 threads).
  RmsnormConfig c;
  c.vec = 8;
  c.threads = 32;
  while (c.threads < kRmsnormMaxThreadsPerCta && c.threads * c.vec * 4 < hidden)
    c.threads *= 2;
  // Few rows: a row of fewer than 128 threads takes twice the threads with 8-byte vectors, the
  // same lanes and so the same bits. The grid is a few CTAs there and more loads in flight per
  // row finish it sooner (hidden 1536 on an H100: 2-5 % at rows 1-256, 10 % slower at 4096).
  if (rows <= kRmsnormFewRows && c.threads < 128) {
    c.vec = 4;
    c.threads *= 2;
  }
  c.rows_per_cta = c.threads >= 128 ? 1 : 128 / c.threads;
  return c;
}

bool rmsnorm_can_implement(const RmsnormConfig &config, int rows, int hidden, std::string *reason) {
  if (rows < 1)
    return refuse(reason, "rows=" + str(rows) + " is below 1");
  if (hidden < 8 || hidden % 8 != 0)
    return refuse(reason, "hidden=" + str(hidden) + " is not a positive multiple of 8");
  if (config.threads * config.rows_per_cta > kRmsnormMaxThreadsPerCta)
    return refuse(reason, "threads x rows_per_cta=" + str(config.threads * config.rows_per_cta) +
                              " exceeds " + str(kRmsnormMaxThreadsPerCta));
  const int64_t chunks = (hidden / config.vec + config.threads - 1) / config.threads;
  if (chunks > kRmsnormMaxChunks)
    return refuse(reason, "hidden=" + str(hidden) + " needs " + str(chunks) +
                              " vectors per thread at threads=" + str(config.threads) + ", vec=" +
                              str(config.vec) + " (at most " + str(kRmsnormMaxChunks) + ")");
  // Every default is admitted; other configs must not leave threads of a row idle.
  if (!(config == rmsnorm_default(rows, hidden)) && config.lanes() > hidden)
    return refuse(reason, "threads x vec=" + str(config.lanes()) +
                              " exceeds hidden=" + str(hidden) + " (idle threads)");
  bool compiled = false;
  for (const RmsnormConfig &c : rmsnorm_configs())
    compiled = compiled || c == config;
  if (!compiled)
    return refuse(reason, "not a compiled rmsnorm config");
  return true;
}

} // namespace hone::cuda

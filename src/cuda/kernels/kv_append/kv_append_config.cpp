// kv_append host logic: tactic spelling, the static default and can_implement. Kernels and the
// config list: kv_append.cu.
#include <string>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/kv_append/kv_append.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kKernel = "kv_append.paged";
constexpr const char *kFields[] = {"vec", "threads"};

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

Tactic KvAppendConfig::to_tactic() const {
  const int values[] = {vec, threads};
  return config_tactic(kKernel, kFields, values, "", 0);
}

KvAppendConfig KvAppendConfig::from_tactic(const Tactic &tactic) {
  if (tactic.kernel != kKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a kv_append config (kernel " +
                          kKernel + ")");
  int unused = 0;
  const std::vector<int> v = config_fields(tactic, kFields, "", &unused);
  KvAppendConfig c{v[0], v[1]};
  if (c.vec != 4 && c.vec != 8)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': vec=" + str(c.vec) + " is not 4 or 8");
  if (c.threads != 32 && c.threads != 64 && c.threads != 128 && c.threads != 256)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': threads=" + str(c.threads) +
                          " is not 32, 64, 128 or 256");
  return c;
}

KvAppendConfig kv_append_default(int batch, int hkv, int head_dim) {
  (void)batch;
  // 16-byte copies; one CTA covers one request's K (or V) heads where they fit 128 threads.
  KvAppendConfig c;
  c.vec = 8;
  const int vectors = hkv * head_dim / 8;
  c.threads = vectors <= 32 ? 32 : vectors <= 64 ? 64 : 128;
  return c;
}

bool kv_append_can_implement(const KvAppendConfig &config, int batch, int hkv, int head_dim,
                             std::string *reason) {
  if (batch < 1 || hkv < 1)
    return refuse(reason, "batch=" + str(batch) + ", hkv=" + str(hkv) + ": both must be >= 1");
  if (head_dim < 8 || head_dim % 8 != 0)
    return refuse(reason, "head_dim=" + str(head_dim) + " is not a positive multiple of 8");
  bool compiled = false;
  for (const KvAppendConfig &c : kv_append_configs())
    compiled = compiled || c == config;
  if (!compiled)
    return refuse(reason, "not a compiled kv_append config");
  // Threads past a request's vectors only idle (the default is always admitted).
  const int64_t vectors = static_cast<int64_t>(hkv) * head_dim / config.vec;
  if (!(config == kv_append_default(batch, hkv, head_dim)) && config.threads > 2 * vectors)
    return refuse(reason, "threads=" + str(config.threads) + " exceed twice the " + str(vectors) +
                              " vectors of a request (idle threads)");
  return true;
}

} // namespace hone::cuda

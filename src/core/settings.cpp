#include "hone/settings.h"

#include <cstdlib>
#include <string>

#include "hone/error.h"

extern char **environ;

namespace hone {

namespace {

std::optional<std::string> env(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return std::nullopt;
  return std::string(v);
}

// A non-negative integer variable; throws naming it and the value otherwise.
std::optional<int> env_int(const char *name, int lo, int hi) {
  const std::optional<std::string> v = env(name);
  if (!v)
    return std::nullopt;
  size_t used = 0;
  long value = -1;
  try {
    value = std::stol(*v, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != v->size() || value < lo || value > hi)
    HONE_INVALID_ARGUMENT(std::string(name) + "='" + *v + "': expected an integer in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(value);
}

bool env_flag(const char *name) {
  const std::optional<std::string> v = env(name);
  return v && (*v == "1" || *v == "on" || *v == "true");
}

} // namespace

Settings Settings::from_env() {
  Settings s;
  s.autotune = env_flag("HONE_AUTOTUNE");
  s.use_cache = env("HONE_CACHE").value_or("") != "off";
  s.cache_dir = env("HONE_CACHE_DIR").value_or("");
  s.xdg_cache_home = env("XDG_CACHE_HOME").value_or("");
  s.home = env("HOME").value_or("");
  s.timing = env("HONE_TIMING").value_or("");
  if (!s.timing.empty() && s.timing != "graph" && s.timing != "events")
    HONE_INVALID_ARGUMENT("HONE_TIMING='" + s.timing + "' (expected graph or events)");
  s.qmm_tile_m = env_int("HONE_QMM_TILE_M", 1, 1024);
  s.qmm_tile_n = env_int("HONE_QMM_TILE_N", 1, 1024);
  s.qmm_tile_k = env_int("HONE_QMM_TILE_K", 1, 1024);
  s.qmv_max_rows = env_int("HONE_QMV_MAX_ROWS", 0, 1 << 20);
  s.decode_kv_chunk = env_int("HONE_DECODE_KV_CHUNK", 0, 1 << 24);
  s.check_pages = env_flag("HONE_CHECK_PAGES");
  constexpr std::string_view prefix = "HONE_TACTIC_";
  for (char **e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !entry.starts_with(prefix) || eq + 1 == entry.size())
      continue;
    s.tactics.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return s;
}

std::optional<std::string_view> Settings::tactic(std::string_view name) const {
  auto it = tactics.find(name);
  if (it == tactics.end())
    return std::nullopt;
  return std::string_view(it->second);
}

const Settings &settings() {
  static const Settings s = Settings::from_env();
  return s;
}

} // namespace hone

// Settings: every HONE_* environment variable, read in one place. The process-wide object is
// read once, at first use; a caller that needs a fresh read (a test that sets a variable)
// builds its own with Settings::from_env(). The README's table of variables mirrors the fields
// below: name, meaning, default, example.
//
//   const hone::Settings &s = hone::settings();
//   if (s.decode_kv_chunk) chunk = *s.decode_kv_chunk;   // HONE_DECODE_KV_CHUNK wins
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hone {

struct Settings {
  // HONE_AUTOTUNE=1|on|true: tune a missing bucket lazily at first use. Default off.
  bool autotune = false;
  // HONE_CACHE=off: ignore the tuning cache. Default on.
  bool use_cache = true;
  // HONE_CACHE_DIR: directory of tuning-cache.json. Empty: XDG_CACHE_HOME/hone, ~/.cache/hone.
  std::string cache_dir;
  // XDG_CACHE_HOME and HOME, read for the cache location when HONE_CACHE_DIR is empty.
  std::string xdg_cache_home, home;
  // HONE_TIMING=graph|events: how a CUDA sample hides launch gaps. Empty: graph.
  std::string timing;
  // HONE_QMM_TILE_M / _N / _K: an explicit qmm tile, verbatim; wins over the cache.
  std::optional<int> qmm_tile_m, qmm_tile_n, qmm_tile_k;
  // HONE_QMV_MAX_ROWS: the largest row count quantized_linear runs on qmv; wins over the cache.
  std::optional<int> qmv_max_rows;
  // HONE_DECODE_KV_CHUNK: split-KV chunk in tokens for decode.paged (0: no split); wins over
  // the cache and the heuristic.
  std::optional<int> decode_kv_chunk;
  // HONE_CHECK_PAGES=1: decode.paged checks every page index on the device first.
  bool check_pages = false;
  // HONE_TACTIC_<NAME> and HONE_TACTIC_<BACKEND>_<NAME>: variable name -> value, verbatim.
  std::map<std::string, std::string, std::less<>> tactics;

  // Reads the environment now. Throws Error(invalid_argument) naming the variable and its
  // value when one is malformed (a non-integer HONE_QMV_MAX_ROWS, an unknown HONE_TIMING).
  static Settings from_env();
  // The value of HONE_TACTIC_... variable `name`, if set and non-empty.
  std::optional<std::string_view> tactic(std::string_view name) const;
};

// The process-wide settings, read from the environment once, at first use.
const Settings &settings();

} // namespace hone

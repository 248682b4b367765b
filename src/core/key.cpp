#include "hone/key.h"

#include <charconv>
#include <string>

#include "hone/backend.h"
#include "hone/build_info.h"
#include "hone/op.h"

namespace hone {

namespace {
// An empty value is printed as "" so that "runtime \"\" != cudart 13000" stays readable.
std::string shown(const std::string &value) { return value.empty() ? "\"\"" : value; }
} // namespace

std::string problem_key(const TunableOp &op, const Shape &bucket) {
  std::string key(op.name());
  key += '|';
  key += op.buckets().describe(bucket);
  key += '|';
  key += to_string(bucket.dtype);
  return key;
}

std::string cache_key(const TunableOp &op, const Shape &bucket, const std::string &device_model) {
  std::string key(op.name());
  key += '@';
  key += std::to_string(op.version());
  key += '|';
  key += op.buckets().describe(bucket);
  key += '|';
  key += to_string(bucket.dtype);
  key += '|';
  key += device_model;
  return key;
}

std::optional<CacheKeyParts> parse_cache_key(std::string_view key) {
  // op@version | bucket | dtype | device: the device model comes last and may hold '|'.
  std::string_view fields[3];
  for (std::string_view &field : fields) {
    const size_t bar = key.find('|');
    if (bar == std::string_view::npos)
      return std::nullopt;
    field = key.substr(0, bar);
    key.remove_prefix(bar + 1);
  }
  const size_t at = fields[0].find('@');
  if (at == std::string_view::npos || at == 0)
    return std::nullopt;
  CacheKeyParts parts;
  parts.op = std::string(fields[0].substr(0, at));
  const std::string_view version = fields[0].substr(at + 1);
  const auto [end, ec] =
      std::from_chars(version.data(), version.data() + version.size(), parts.version);
  if (ec != std::errc() || end != version.data() + version.size())
    return std::nullopt;
  parts.bucket = std::string(fields[1]);
  parts.dtype = std::string(fields[2]);
  parts.device = std::string(key);
  return parts;
}

Metadata current_metadata(const Backend &backend, bool cold) {
  const DeviceInfo &info = backend.info();
  Metadata m;
  m.hone_version = HONE_VERSION_STRING;
  m.kernel_build = backend.kernel_build_id();
  m.backend = info.backend;
  m.runtime = info.runtime_version;
  m.driver = info.driver_version;
  m.method = backend.method_id() + (cold ? "+cold" : "+warm");
  return m;
}

std::optional<std::string> stale_reason(const Metadata &entry, const Metadata &current) {
  // Checked in the order of the struct, so the reason names the first differing field.
  const struct {
    const char *name;
    const std::string Metadata::*field;
  } fields[] = {
      {"hone_version", &Metadata::hone_version},
      {"kernel_build", &Metadata::kernel_build},
      {"backend", &Metadata::backend},
      {"runtime", &Metadata::runtime},
      {"driver", &Metadata::driver},
      {"method", &Metadata::method},
  };
  for (const auto &f : fields) {
    const std::string &a = entry.*(f.field);
    const std::string &b = current.*(f.field);
    if (a != b)
      return std::string(f.name) + " " + shown(a) + " != " + shown(b);
  }
  return std::nullopt;
}

} // namespace hone

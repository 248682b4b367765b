// Problem key, cache key and environment metadata (docs/cache-format.md).
//
//   hone::Metadata now = hone::current_metadata(backend);
//   std::string key = hone::cache_key(op, bucket, backend.info().model);
//   // "gemv.f32@1|rows=8,n=4096,k=4096|f32|AMD EPYC 7B13"
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hone/shape.h"

namespace hone {

class Backend;
class TunableOp;

// `gemv.f32|rows=8,n=4096,k=4096|f32`: op name, bucketed dimensions, dtype.
std::string problem_key(const TunableOp &op, const Shape &bucket);
// problem key + op identity (name@version) + device model.
std::string cache_key(const TunableOp &op, const Shape &bucket, const std::string &device_model);

// The fields of a cache key: "gemv.f32@1|rows=8,n=4096,k=4096|f32|AMD EPYC 7B13".
struct CacheKeyParts {
  std::string op;     // "gemv.f32"
  int version = 0;    // 1
  std::string bucket; // "rows=8,n=4096,k=4096"
  std::string dtype;  // "f32"
  std::string device; // "AMD EPYC 7B13" (may itself hold '|')
};
// nullopt when `key` is not of cache_key()'s form.
std::optional<CacheKeyParts> parse_cache_key(std::string_view key);

// The environment an entry was measured in. Any field that differs makes an entry stale.
struct Metadata {
  std::string hone_version;   // HONE_VERSION
  std::string kernel_build;   // hash of the compiled kernel sources of the backend
  std::string backend;        // "cpu" / "cuda"
  std::string runtime;        // backend runtime version ("" on cpu)
  std::string driver;         // driver version (kernel release on cpu)
  std::string method;         // measurement method id, including cold/warm
  friend bool operator==(const Metadata &, const Metadata &) = default;
};

Metadata current_metadata(const Backend &backend, bool cold = true);

// Why `entry` may not be used under `current` ("hone_version 0.0.9 != 0.1.0"), or nullopt
// when every field matches.
std::optional<std::string> stale_reason(const Metadata &entry, const Metadata &current);

} // namespace hone

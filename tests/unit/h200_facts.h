// A backend that only states the device facts of an H200 with 140 GiB free, so that the CUDA
// ops' tuning matrix, keys and metadata can be derived without a GPU. It times nothing.
//
//   const hone::testing::H200Facts h200;
//   std::string key = hone::cache_key(op, bucket, h200.info().model);   // "...|NVIDIA H200"
#pragma once

#include <optional>
#include <string>

#include "hone/backend.h"
#include "hone/error.h"

namespace hone::testing {

class H200Facts final : public Backend {
public:
  const DeviceInfo &info() const override { return info_; }
  std::optional<size_t> available_memory_bytes() const override { return size_t{140} << 30; }
  std::string method_id() const override { return "cuda.graph.v3"; }
  std::string kernel_build_id() const override { return "0123456789abcdef"; }
  Timer &timer() override { HONE_RUNTIME_ERROR("H200Facts times nothing"); }
  void sync() override {}
  void flush_llc() override {}

private:
  static DeviceInfo facts() {
    DeviceInfo d;
    d.backend = "cuda";
    d.model = "NVIDIA H200";
    d.runtime_version = "cudart 13000";
    d.driver_version = "580.159";
    return d;
  }
  DeviceInfo info_ = facts();
};

} // namespace hone::testing

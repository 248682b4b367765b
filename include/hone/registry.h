// The ops and backends a build carries. Surfaces (CLI, C API) look ops up by name here.
//
//   hone::Registry &r = hone::Registry::global();
//   const hone::TunableOp *op = r.find("gemv.f32", "cpu");
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hone/backend.h"
#include "hone/op.h"

namespace hone {

// A matched peer (another library's kernel for the same problem, e.g. cuBLAS for
// gemv.bf16) bound to a prepared workload's buffers, so both are timed in the same run.
class Peer {
public:
  virtual ~Peer() = default;
  virtual std::string name() const = 0;
  // Enqueues one launch on input copy `copy` of the workload it was made for.
  virtual void run(int copy) = 0;
};
// Makes a peer over `workload` (which the op's prepare() produced); throws
// Error(invalid_argument) when the workload is of another op.
using PeerFactory = std::function<std::unique_ptr<Peer>(Workload &workload)>;

class Registry {
public:
  // All ops of every backend compiled in, registered on first use.
  static Registry &global();

  void add(std::unique_ptr<TunableOp> op);
  // nullptr when no op of that name exists for `backend`.
  const TunableOp *find(std::string_view name, std::string_view backend) const;
  std::vector<const TunableOp *> ops(std::string_view backend) const;

  void add_peer(const TunableOp &op, std::string peer_name, PeerFactory factory);
  // nullptr when `op` has no peer of that name.
  const PeerFactory *find_peer(const TunableOp &op, std::string_view peer_name) const;
  std::vector<std::string> peers(const TunableOp &op) const;

private:
  struct PeerEntry {
    const TunableOp *op;
    std::string name;
    PeerFactory factory;
  };
  std::vector<std::unique_ptr<TunableOp>> ops_;
  std::vector<PeerEntry> peers_;
};

// True when backend `name` ("cpu", "cuda") is compiled into this build, device present or not.
bool backend_compiled(std::string_view name);
// Backends compiled into this build, best first ("cuda" when a device is present, then
// "cpu"). Throws Error(invalid_argument) for an unknown or unavailable name.
std::vector<std::string> available_backends();
Backend &get_backend(std::string_view name);
// The best backend present.
Backend &best_backend();

} // namespace hone

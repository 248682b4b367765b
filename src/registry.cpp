#include "hone/registry.h"

#include <mutex>

#include "cpu/cpu_backend.h"
#include "decode_step_chain_op.h"
#include "hone/error.h"
#ifdef HONE_WITH_CUDA
#include "cuda/backend/cuda_backend.h"
#endif

namespace hone {

Registry &Registry::global() {
  static Registry *registry = [] {
    static Registry r;
    cpu::register_ops(r);
#ifdef HONE_WITH_CUDA
    cuda::register_ops(r);
    // The decode step's chain tactic (no kernel of its own: hone tune --model times it).
    r.add(std::make_unique<DecodeStepChainOp>());
#endif
    return &r;
  }();
  return *registry;
}

void Registry::add(std::unique_ptr<TunableOp> op) {
  if (find(op->name(), op->backend()))
    HONE_RUNTIME_ERROR("op '" + std::string(op->name()) + "' registered twice for backend '" +
                       std::string(op->backend()) + "'");
  ops_.push_back(std::move(op));
}

const TunableOp *Registry::find(std::string_view name, std::string_view backend) const {
  for (const auto &op : ops_)
    if (op->name() == name && op->backend() == backend)
      return op.get();
  return nullptr;
}

std::vector<const TunableOp *> Registry::ops(std::string_view backend) const {
  std::vector<const TunableOp *> out;
  for (const auto &op : ops_)
    if (op->backend() == backend)
      out.push_back(op.get());
  return out;
}

void Registry::add_peer(const TunableOp &op, std::string peer_name, PeerFactory factory) {
  peers_.push_back({&op, std::move(peer_name), std::move(factory)});
}

const PeerFactory *Registry::find_peer(const TunableOp &op, std::string_view peer_name) const {
  for (const auto &p : peers_)
    if (p.op == &op && p.name == peer_name)
      return &p.factory;
  return nullptr;
}

std::vector<std::string> Registry::peers(const TunableOp &op) const {
  std::vector<std::string> out;
  for (const auto &p : peers_)
    if (p.op == &op)
      out.push_back(p.name);
  return out;
}

bool backend_compiled(std::string_view name) {
#ifdef HONE_WITH_CUDA
  if (name == "cuda")
    return true;
#endif
  return name == "cpu";
}

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
#ifdef HONE_WITH_CUDA
  if (cuda::device_present())
    out.push_back("cuda");
#endif
  out.push_back("cpu");
  return out;
}

Backend &get_backend(std::string_view name) {
  if (name == "cpu")
    return cpu::backend();
#ifdef HONE_WITH_CUDA
  if (name == "cuda") {
    if (!cuda::device_present())
      HONE_INVALID_ARGUMENT("backend 'cuda' is compiled in but no CUDA device is present");
    return cuda::backend();
  }
#else
  if (name == "cuda")
    HONE_INVALID_ARGUMENT("backend 'cuda' is not compiled into this build (nvcc was not found)");
#endif
  HONE_INVALID_ARGUMENT("unknown backend '" + std::string(name) + "' (expected cpu or cuda)");
}

Backend &best_backend() { return get_backend(available_backends().front()); }

} // namespace hone

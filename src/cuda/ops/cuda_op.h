// CudaOp: what every CUDA op of hone shares as a TunableOp — its name, the "cuda" backend,
// bf16 data, its buckets, and tactic kernels spelled "<name>.<variant>" (qmv.affine.mma), so
// that a CPU op of the same name, whose tactics use the bare name, never takes a shared
// HONE_TACTIC_<NAME> meant for the GPU. Plus the two steps of a config-table op: candidates
// (the default first, then every compiled config that can implement the bucket) and compile
// (a tactic naming a config this build did not compile is refused, naming it).
//
//   class QmvAffineOp final : public CudaOp { ... };   // QmvAffineOp() : CudaOp("qmv.affine",
//   spec) return default_first(def, qmv_affine_configs(bits), [&](const QmvAffineConfig &c) {...});
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// What an op header declares next to its op (its Workload on CudaWorkloadOf, device buffers,
// the parsed-config memo) comes with this header.
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/last_config.h"
#include "cuda/gate/cuda_workload.h"
#include "cuda/kernels/common/split_k_family.h"
#include "hone/error.h"
#include "hone/op.h"

namespace hone::cuda {

class CudaBackend;

// Declares, in an op class, the TunableOp interface every CUDA op defines (its contracts are
// TunableOp's; an op states what it adds in a comment above the macro, "validate(): ...").
//
//   class RopeOp final : public CudaOp { public: RopeOp(); HONE_CUDA_OP_INTERFACE; };
#define HONE_CUDA_OP_INTERFACE                                                                     \
  std::vector<Tactic> candidates(const Shape &bucket) const override;                              \
  Tactic default_tactic(const Shape &bucket) const override;                                       \
  void validate(const Shape &shape) const override;                                                \
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;                            \
  CompiledTactic compile(const Tactic &tactic) const override;                                     \
  std::optional<WorkloadBytes> workload_bytes(const Shape &shape) const override

class CudaOp : public TunableOp {
public:
  std::string_view name() const final { return name_; }
  std::string_view backend() const final { return "cuda"; }
  DType dtype() const override { return DType::bf16; }
  const BucketSpec &buckets() const final { return buckets_; }
  // Version 1 until an op changes its tactics' meaning (which invalidates its cache entries).
  int version() const override { return 1; }
  Numerics default_numerics() const final { return numerics_; }
  // True for "<name>.<variant>".
  bool owns_kernel(std::string_view kernel) const override {
    return kernel.size() > name_.size() + 1 && kernel.starts_with(name_) &&
           kernel[name_.size()] == '.';
  }

protected:
  // `numerics`: what a tune asks of the op's candidates unless the user says otherwise
  // (batch_invariant where the default's per-row result is independent of the row count).
  CudaOp(std::string name, BucketSpec buckets, Numerics numerics)
      : name_(std::move(name)), buckets_(std::move(buckets)), numerics_(numerics) {}

private:
  std::string name_;
  BucketSpec buckets_;
  Numerics numerics_;
};

// The tactics of a bucket: `def` first, then every config of `compiled` for which
// can_implement(config) holds, each once.
template <class Config, class CanImplement>
std::vector<Tactic> default_first(const Config &def, const std::vector<Config> &compiled,
                                  CanImplement can_implement) {
  const Tactic first = def.to_tactic();
  std::vector<Tactic> out{first};
  for (const Config &c : compiled) {
    if (!can_implement(c))
      continue;
    Tactic t = c.to_tactic();
    if (!(t == first))
      out.push_back(std::move(t));
  }
  return out;
}

// Config::from_tactic(tactic), refused (Error(invalid_argument) naming `op` and the tactic)
// unless one of `tables` holds it: a launch of an uncompiled config would fail.
template <class Config>
CompiledTactic compile_config(std::string_view op, const Tactic &tactic,
                              std::initializer_list<const std::vector<Config> *> tables) {
  const Config c = Config::from_tactic(tactic);
  for (const std::vector<Config> *t : tables)
    if (is_compiled(c, *t))
      return CompiledTactic::of(c);
  HONE_INVALID_ARGUMENT(std::string(op) + ": tactic '" + tactic.str() +
                        "' is not a config compiled into this build");
}

} // namespace hone::cuda

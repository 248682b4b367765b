// TunableOp: what the tuner needs from an op. An op names its candidates for a shape bucket
// and a default; prepare() builds a Workload (inputs, rotation copies, outputs) on which a
// tactic is run and checked against the op's reference.
//
//   auto w = op.prepare(shape);              // allocates inputs, reports bytes per launch
//   w->set_rotation(3);                      // cold-L2 copies
//   if (w->check(t, Numerics::tolerance).pass) w->run(t, /*copy=*/1);
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "hone/bucket.h"
#include "hone/dtype.h"
#include "hone/error.h"
#include "hone/shape.h"
#include "hone/tactic.h"

namespace hone {

struct Settings;

// Outcome of trying a tactic; everything but ok carries a reason and is recorded, and the
// sweep goes on.
enum class Status {
  ok,
  cannot_implement, // the tactic does not support this shape
  gate_failed,      // output differs from the reference beyond the bound
  launch_failed,    // the kernel failed to run
  rejected,         // admitted by shape but refused by a backend rule (e.g. register spills)
};
const char *to_string(Status status);

// How a candidate's output is judged before it is timed.
enum class Numerics {
  batch_invariant, // every row bit-identical to the single-row result of the default tactic
  tolerance,       // relative L2 error under the op's per-dtype bound
};
const char *to_string(Numerics numerics);

struct CheckResult {
  Status status = Status::ok;
  double error = 0;   // relative L2 error vs the reference (tolerance) or mismatching
                      // elements (batch_invariant)
  double bound = 0;   // the bound `error` was held to
  std::string reason; // empty when status == ok
  bool pass() const { return status == Status::ok; }
};

class Workload {
public:
  virtual ~Workload() = default;
  // [bytes] the fewest bytes one launch must touch (inputs read once, outputs written once).
  virtual size_t bytes_per_launch() const = 0;
  // Ensures `copies` independent input sets exist (>= 1); copy i is used by run(t, i).
  virtual void set_rotation(int copies) = 0;
  virtual int rotation() const = 0;
  // ok when `tactic` can run this problem; otherwise a status and reason, and run() must not
  // be called with it.
  virtual Status can_run(const Tactic &tactic, std::string *reason) const = 0;
  // Enqueues one launch on input copy `copy`. Never synchronises.
  virtual void run(const Tactic &tactic, int copy) = 0;
  // Fresh random inputs, poisoned outputs, one run, comparison against the reference.
  virtual CheckResult check(const Tactic &tactic, Numerics numerics) = 0;
};

// An op's parsed form of one tactic (TunableOp::compile), e.g. a kernel config struct. The
// dispatcher builds it once per dispatched shape (Resolution::compiled), so an op's hot-path
// entry point reads a ready config instead of parsing the tactic on every call.
class CompiledTactic {
public:
  CompiledTactic() = default;
  template <class T> static CompiledTactic of(T value) {
    CompiledTactic c;
    c.type_ = &typeid(T);
    c.value_ = std::make_shared<const T>(std::move(value));
    return c;
  }
  explicit operator bool() const { return value_ != nullptr; }
  // The value as T. Throws Error(runtime) when it holds nothing or another type: a caller
  // asking for the wrong config type is a bug, not bad input.
  template <class T> const T &as() const {
    if (!type_ || *type_ != typeid(T))
      HONE_RUNTIME_ERROR(std::string("compiled tactic holds ") +
                         (type_ ? type_->name() : "nothing") + ", not " + typeid(T).name());
    return *static_cast<const T *>(value_.get());
  }
  // The value when it is a T, else null (an op whose tactics parse to more than one type).
  template <class T> const T *get_if() const {
    return type_ && *type_ == typeid(T) ? static_cast<const T *>(value_.get()) : nullptr;
  }

private:
  const std::type_info *type_ = nullptr;
  std::shared_ptr<const void> value_;
};

// [bytes] what TunableOp::prepare() allocates on the backend's device for a shape, known
// before anything is allocated, so that a caller can hold it against the memory the device has.
struct WorkloadBytes {
  size_t per_copy = 0; // one rotation copy of the inputs (set_rotation(n) holds n of them)
  size_t fixed = 0;    // allocated once: outputs, reference outputs, workspace
  // [bytes] with `copies` input copies.
  size_t total(int copies) const { return per_copy * static_cast<size_t>(copies) + fixed; }
};

class TunableOp {
public:
  virtual ~TunableOp() = default;
  virtual std::string_view name() const = 0; // e.g. "gemv.f32"
  // Bump when the candidate list or the meaning of a tactic changes: cache entries of an
  // older version are stale.
  virtual int version() const = 0;
  virtual std::string_view backend() const = 0;  // "cpu" or "cuda"
  virtual DType dtype() const = 0;               // element type of X and Y (problem key)
  virtual const BucketSpec &buckets() const = 0; // also names the dimensions
  // Candidates for a bucketed shape, default first.
  // Every tactic a tune of any Numerics mode could pick (a cached pick is checked against it).
  virtual std::vector<Tactic> candidates(const Shape &bucket) const = 0;
  // The candidates a tune in mode `numerics` gates and times, default first: candidates(bucket)
  // less the tactics that cannot keep that mode's promise (gemv.bf16's cuBLASLt tactics under
  // batch_invariant), so that they are never measured for nothing.
  virtual std::vector<Tactic> tune_candidates(const Shape &bucket, Numerics numerics) const {
    (void)numerics;
    return candidates(bucket);
  }
  // True when `tactic` runs a vendor library (cuBLASLt) rather than one of hone's own kernels.
  // Reports name the best of the op's own kernels apart from such a pick (best_own_index()), so
  // that a vendor candidate cannot hide a weak kernel.
  virtual bool is_vendor_tactic(const Tactic &tactic) const {
    (void)tactic;
    return false;
  }
  virtual Tactic default_tactic(const Shape &bucket) const = 0;
  // Throws Error(invalid_argument) naming the bad value (e.g. K not a multiple of group).
  virtual void validate(const Shape &shape) const = 0;
  virtual std::unique_ptr<Workload> prepare(const Shape &shape) const = 0;
  // What prepare(shape) allocates on the device, for the memory check before it (tune, bench).
  // nullopt: the op does not say, and the check is skipped.
  virtual std::optional<WorkloadBytes> workload_bytes(const Shape &shape) const {
    (void)shape;
    return std::nullopt;
  }
  // The numerics an op promises by default.
  virtual Numerics default_numerics() const { return Numerics::tolerance; }
  // True when a tactic's kernel field names one of this op's implementations (default: the
  // op's own name). Ops of one name on two backends (qmv.affine on cpu and cuda) tell their
  // tactics apart by it.
  virtual bool owns_kernel(std::string_view kernel) const { return kernel == name(); }
  // An explicit tactic from the environment `settings` holds, which wins over the cache:
  //   HONE_TACTIC_<BACKEND>_<NAME> (e.g. HONE_TACTIC_CUDA_QMV_AFFINE) for this backend's op
  //   only; a tactic there that the op does not own is an error naming the variable;
  //   else HONE_TACTIC_<NAME> (e.g. HONE_TACTIC_QMV_AFFINE), which applies to whichever op of
  //   that name owns its kernel; the op of the other backend ignores it with one warning.
  // Used verbatim; a malformed value, or one compile() refuses, throws Error(invalid_argument)
  // naming the variable. An op with settings of its own (a qmm tile) overrides this.
  virtual std::optional<Tactic> env_override(const Shape &bucket, const Settings &settings) const;
  // The parsed form of `tactic` for the op's entry point (empty: the op parses nothing).
  // Throws Error(invalid_argument) for a tactic this build cannot run (not one of the op's
  // tactics, or a configuration not compiled in), naming it.
  virtual CompiledTactic compile(const Tactic &tactic) const {
    (void)tactic;
    return {};
  }
  // Why this build cannot serve `bucket` with `tactic`, or nullopt when it can: the tactic must
  // compile() and be the bucket's default or one of its candidates -- what a tune of this
  // build could have picked. A cache entry failing this is as unusable as a stale one.
  std::optional<std::string> unrunnable_reason(const Tactic &tactic, const Shape &bucket) const;
};

// "HONE_TACTIC_GEMV_F32" for "gemv.f32".
std::string tactic_env_name(std::string_view op_name);
// "HONE_TACTIC_CUDA_QMV_AFFINE" for ("cuda", "qmv.affine").
std::string tactic_env_name(std::string_view backend, std::string_view op_name);

} // namespace hone

// The Workload of a CUDA op whose output is one bf16 tensor [rows, cols]: it owns the rotation
// of the op's input sets (cold-L2 copies), the output and its poison, can_run() (the op's
// admission checks, then the spill rule), run(), and the gate: fresh random inputs in copy 0,
// a poisoned output, one launch, NaN and relative-L2 checks against the op's float64
// reference, and in batch-invariant mode a bitwise comparison of every row with the rows=1
// default. The NaN and bitwise counts run on the device; only the rows the reference covers
// are downloaded. An op supplies only what is its own, through the hooks below.
//
//   class QmvAffineWorkload final : public CudaWorkloadOf<QmvInputs> { ... };  // the hooks
//   auto w = std::make_unique<QmvAffineWorkload>(backend, problem);           // rotation 1
//   if (w->check(tactic, Numerics::batch_invariant).pass()) w->run(tactic, 0);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/device_buffer.h"
#include "cuda/kernels/common/kernel_types.h"
#include "hone/op.h"

namespace hone::cuda {

class CudaBackend;

// Declare, in a workload class, the hooks of CudaWorkloadOf<Inputs> every op's workload
// defines, and the batch-invariance hooks of an op whose default is batch invariant (their
// contracts are CudaWorkload's and CudaWorkloadOf's, below).
//
//   class RopeWorkload final : public CudaWorkloadOf<RopeInputs> {
//     ... private: HONE_CUDA_WORKLOAD_HOOKS(RopeInputs); HONE_CUDA_BATCH_INVARIANCE_HOOKS; };
#define HONE_CUDA_WORKLOAD_HOOKS(Inputs)                                                           \
  std::optional<std::string> cannot_implement(const Tactic &tactic) const override;                \
  std::optional<KernelResources> resources(const Tactic &tactic) const override;                   \
  Inputs make_copy() const override;                                                               \
  void fill_copy(size_t copy) override;                                                            \
  LaunchStatus launch(const Tactic &tactic, int copy) override
#define HONE_CUDA_BATCH_INVARIANCE_HOOKS                                                           \
  std::optional<SummationOrder> summation_order(const Tactic &tactic) const override;              \
  Tactic single_row_default() const override;                                                      \
  LaunchStatus launch_single_row(int row, void *y_row) override

// The K summation order of a GEMV-family config: its path and k_slices (warps_k x split_k).
// Configs of equal order give bit-identical rows for every row count.
struct SummationOrder {
  KernelPath path = KernelPath::mma;
  int k_slices = 1;
  bool operator==(const SummationOrder &) const = default;
};

class CudaWorkload : public Workload {
public:
  void set_rotation(int copies) final;
  int rotation() const final { return static_cast<int>(rotation_); }
  // cannot_implement() first, then the spill rule on resources(); never launches.
  Status can_run(const Tactic &tactic, std::string *reason) const final;
  // Throws Error(runtime) naming the tactic when the launch is refused.
  void run(const Tactic &tactic, int copy) final;
  CheckResult check(const Tactic &tactic, Numerics numerics) final;

  cudaStream_t stream() const;
  void *y() const { return y_.data(); }
  int64_t output_rows() const { return out_rows_; }
  int64_t output_cols() const { return out_cols_; }
  // Writes the bf16 NaN pattern 0xFFFF over Y; enqueued on stream().
  void poison_output();
  // Fresh random inputs (new seeds) in copy 0; enqueued on stream().
  void randomize_inputs() { fill_copy(0); }
  // Synchronous copy of Y to the host (bf16 bits).
  std::vector<uint16_t> download_y() const;
  // The rows of `y` ([out_rows, out_cols]) that reference() covers, in its order: all of `y`
  // when the op checks every row, else the sampled rows (reference_rows()).
  std::vector<uint16_t> checked_rows(const std::vector<uint16_t> &y) const;
  // [bytes] of device memory this base allocates for a bf16 [out_rows, out_cols] output: Y and
  // the rows=1 reference results (TunableOp::workload_bytes of a CUDA op adds its own).
  static size_t output_bytes(int64_t out_rows, int64_t out_cols) {
    return 2 * static_cast<size_t>(out_rows) * static_cast<size_t>(out_cols) * sizeof(uint16_t);
  }

protected:
  // Y is bf16 [out_rows, out_cols]; `bound` is the relative L2 bound of the tolerance gate.
  // The derived constructor calls set_rotation(1) once its own members exist.
  CudaWorkload(CudaBackend &backend, int64_t out_rows, int64_t out_cols, double bound);

  // --- hooks -------------------------------------------------------------------------------
  // Why `tactic` cannot run this problem (not the op's, not compiled, shape), or nullopt.
  virtual std::optional<std::string> cannot_implement(const Tactic &tactic) const = 0;
  // The resources of `tactic`'s kernel, for the spill rule (nullopt: nothing to check).
  // REQUIRES: cannot_implement(tactic) is nullopt.
  virtual std::optional<KernelResources> resources(const Tactic &tactic) const = 0;
  // Keeps the first `count` copies and appends allocated (unfilled) ones (CudaWorkloadOf).
  virtual void resize_copies(size_t count) = 0;
  // Enqueues fresh random fills (new seeds) of every input of copy `copy` on stream().
  virtual void fill_copy(size_t copy) = 0;
  // Enqueues `tactic` on copy `copy` into y(). REQUIRES: can_run(tactic) is ok.
  virtual LaunchStatus launch(const Tactic &tactic, int copy) = 0;
  // The float64 reference of copy 0's current inputs, [out_rows, out_cols] row-major; only
  // the rows reference_rows() names, in its order, when it names any.
  virtual std::vector<double> reference() const = 0;
  // The output rows the gate holds to reference() (ascending); empty: every row. An op whose
  // float64 reference is too costly for every row (a GEMM, or an elementwise op over a prefill
  // bucket, at thousands of rows; decode attention over long contexts) samples them
  // (sampled_rows()); every output is still checked for NaN (unwritten poison), and the
  // batch-invariance gate still compares every row.
  virtual std::vector<int64_t> reference_rows() const { return {}; }

  // Batch invariance (ops whose rows are independent, e.g. the GEMVs). An op that promises it
  // overrides all three; the default says the op has no such mode.
  // The summation order of `tactic` (nullopt: the op makes no batch-invariance promise).
  virtual std::optional<SummationOrder> summation_order(const Tactic &tactic) const;
  // The rows=1 default every row is held to.
  virtual Tactic single_row_default() const;
  // Enqueues the rows=1 default on activation row `row` of copy 0 into `y_row` (out_cols).
  virtual LaunchStatus launch_single_row(int row, void *y_row);

private:
  CheckResult gate_batch_invariant(CheckResult result);

  CudaBackend &backend_;
  int64_t out_rows_, out_cols_;
  double bound_;
  size_t rotation_ = 0;
  DeviceBuffer y_;           // bf16 [out_rows, out_cols]
  DeviceBuffer y_reference_; // bf16 [out_rows, out_cols]: rows=1 default results
  DeviceBuffer counter_;     // the gate's device-side count (count_bf16)
};

// The thin typed layer: owns the rotation copies of an op's `Copy` (its input set).
template <class Copy> class CudaWorkloadOf : public CudaWorkload {
protected:
  using CudaWorkload::CudaWorkload;

  // An allocated copy, its inputs not yet filled.
  virtual Copy make_copy() const = 0;
  const Copy &copy_at(int copy) const { return copies_.at(static_cast<size_t>(copy)); }

  void resize_copies(size_t count) final {
    if (copies_.size() > count)
      copies_.resize(count);
    while (copies_.size() < count)
      copies_.push_back(make_copy());
  }

  std::vector<Copy> copies_;
};

// Automatic spill rule: a config whose kernel uses local memory is refused, whatever its speed
// today, because spills make its time depend on the L1/L2 state around it. The reason
// ("spills: N bytes local memory, R registers") when `res` shows local memory, else nullopt.
std::optional<std::string> spill_reason(const KernelResources &res);

// `count` rows of [0, rows), evenly spread from the first to the last: ascending, distinct,
// row 0 and row rows - 1 included, so that every tile at least (rows - 1) / (count - 1) rows
// tall holds one. Empty when rows <= count: the caller checks every row. REQUIRES: count >= 2.
std::vector<int64_t> sampled_rows(int64_t rows, int count);

// [float64 outputs] the sampled reference of an elementwise op (silu_mul, rope, rmsnorm) aims
// at per check: its cost is linear in them (~4 M: tens of ms, where every row of a prefill
// bucket, 117 M exp at rows=8192 x inter=14336, took seconds for each candidate).
inline constexpr int64_t kElementwiseReferenceOutputs = int64_t{1} << 22;
// Rows an elementwise op's sampled reference covers at least.
inline constexpr int kElementwiseMinReferenceRows = 16;
// The rows an elementwise op's reference covers when it samples, at `row_outputs` float64
// outputs per row: kElementwiseReferenceOutputs / row_outputs, at least
// kElementwiseMinReferenceRows. REQUIRES: row_outputs >= 1.
int elementwise_reference_row_count(int64_t row_outputs);

// Synchronous copy of `bytes` from device `src` to host `dst`, after the work on `stream`.
void download_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream);
template <class T> std::vector<T> download(const void *src, size_t count, cudaStream_t stream) {
  std::vector<T> out(count);
  download_bytes(out.data(), src, count * sizeof(T), stream);
  return out;
}
// Synchronous copy of rows `rows` (in their order) of the row-major device tensor `src`, rows
// of `row_bytes`, to host `dst` (rows.size() x row_bytes), after the work on `stream`.
void download_row_bytes(void *dst, const void *src, size_t row_bytes,
                        const std::vector<int64_t> &rows, cudaStream_t stream);
// Rows `rows` of the row-major device tensor `src` [total_rows, row_elements], in their order;
// every row when `rows` is empty (the convention of reference_rows()).
template <class T>
std::vector<T> download_rows(const void *src, int64_t total_rows, int64_t row_elements,
                             const std::vector<int64_t> &rows, cudaStream_t stream) {
  const auto row = static_cast<size_t>(row_elements);
  if (rows.empty())
    return download<T>(src, static_cast<size_t>(total_rows) * row, stream);
  std::vector<T> out(rows.size() * row);
  download_row_bytes(out.data(), src, row * sizeof(T), rows, stream);
  return out;
}
// Blocks of a row-major device tensor, in elements: block i is `rows` rows of `row` elements,
// `pitch` apart, from element offsets[i] (one KV head's token rows of one page, say).
struct BlockLayout {
  std::vector<int64_t> offsets;
  int64_t rows = 1, row = 0, pitch = 0;
};
// Synchronous copy of blocks `blocks` of the device tensor `src` (elements of `element_bytes`)
// to host `dst`, dense and in their order (offsets.size() x rows x row elements), after the
// work on `stream`. Gathered on the device (gather_blocks()) through a staging buffer of at
// most 64 MiB, so that one copy crosses to the host per staging load, not one per block.
// REQUIRES: src, row and pitch (in bytes) and every offset (in bytes) multiples of 16.
void download_block_bytes(void *dst, const void *src, size_t element_bytes,
                          const BlockLayout &blocks, cudaStream_t stream);
template <class T>
std::vector<T> download_blocks(const void *src, const BlockLayout &blocks, cudaStream_t stream) {
  std::vector<T> out(blocks.offsets.size() * static_cast<size_t>(blocks.rows) *
                     static_cast<size_t>(blocks.row));
  download_block_bytes(out.data(), src, sizeof(T), blocks, stream);
  return out;
}

} // namespace hone::cuda

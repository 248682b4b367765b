// Pieces shared by the workloads of the GEMV-family CUDA ops (gemv.bf16, qmv.affine): rotation
// copies, the bf16 poison, synchronous downloads, the spill rule, and the correctness gate of a
// bf16 output (summation order, tolerance against a float64 reference, then bitwise against the
// rows=1 default).
//
//   resize_rotation(copies_, copies, stream(), [&] { return make_inputs(); });
//   if (numerics == Numerics::batch_invariant && !same_summation_order(c, d, tactic, result))
//     return result;
//   return gate_bf16_output(gate, numerics, std::move(result));
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h" // KernelResources
#include "hone/error.h"
#include "hone/op.h"

namespace hone::cuda {

// Keeps the first `copies` of `rotation` and appends make() until there are `copies`, then
// waits for `stream`, where make() enqueues the fills of its new copy. Every copy holds its own
// random data: no two copies alike.
template <class Copy, class Make>
void resize_rotation(std::vector<Copy> &rotation, int copies, cudaStream_t stream, Make make) {
  HONE_CHECK(copies >= 1, "set_rotation needs at least one copy");
  const auto count = static_cast<size_t>(copies);
  if (rotation.size() > count)
    rotation.resize(count);
  while (rotation.size() < count)
    rotation.push_back(make());
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Writes 0xFF bytes over `buffer`, enqueued on `stream`: every bf16 element becomes 0xFFFF,
// a NaN, which survives wherever a kernel leaves an output unwritten.
void poison_bf16(const DeviceBuffer &buffer, cudaStream_t stream);

// Synchronous copy of `bytes` from device `src` to host `dst`, after the work on `stream`.
void download_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream);
template <class T> std::vector<T> download(const void *src, size_t count, cudaStream_t stream) {
  std::vector<T> out(count);
  download_bytes(out.data(), src, count * sizeof(T), stream);
  return out;
}

// "cudaErrorName: description" of a launcher's status (a cudaError_t as int); clears the
// error so that the next CUDA call does not report it again.
std::string launch_error(int status);

// Automatic spill rule: a config whose kernel uses local memory is refused, whatever its speed
// today, because spills make its time depend on the L1/L2 state around it. The reason
// ("spills: N bytes local memory, R registers") when `res` shows local memory, else nullopt.
std::optional<std::string> spill_reason(const KernelResources &res);

// The K summation order of a config: its path and k_slices = warps_k x split_k.
struct SummationOrder {
  int path = 0;
  int k_slices = 1;
};

// Batch invariance is a property of the summation order, which a random input can fail to
// expose after bf16 rounding: a config must share the rows=1 default's order before the
// bitwise comparison of gate_bf16_output() even runs. False, with `result` gate_failed and the
// reason naming `single_tactic` (the rows=1 default), when `config` has another order.
bool same_summation_order(SummationOrder config, SummationOrder single,
                          const std::string &single_tactic, CheckResult &result);

// One candidate's run through gate_bf16_output(), on copy 0 of a workload's rotation.
struct Bf16OutputGate {
  cudaStream_t stream = nullptr;
  int rows = 0, n = 0;
  const DeviceBuffer *y = nullptr;                // bf16 [rows, n]: the candidate's output
  const DeviceBuffer *y_reference = nullptr;      // bf16 [rows, n]: the rows=1 default's rows
  std::function<int()> launch;                    // enqueues the candidate into y; cudaError_t
  std::function<std::vector<double>()> reference; // float64 of copy 0, [rows, n] row-major
  // Enqueues the rows=1 default on activation row `row` into `y_row` (n outputs); cudaError_t.
  std::function<int(int row, void *y_row)> launch_single;
  std::string single_tactic; // the rows=1 default, for reasons
};

// REQUIRES: copy 0 holds fresh inputs and Y is poisoned (poison_bf16).
// Launches the candidate and gates its output: a failed launch is launch_failed; NaN outputs
// or a relative L2 error over result.bound are gate_failed. In batch-invariant mode every row
// must then equal, bit for bit, the rows=1 default run on that row (error: mismatching
// outputs, bound 0). Throws Error(runtime) when a kernel faults (the context is lost) or the
// rows=1 default fails to launch.
CheckResult gate_bf16_output(const Bf16OutputGate &gate, Numerics numerics, CheckResult result);

} // namespace hone::cuda

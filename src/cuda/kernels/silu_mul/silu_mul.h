// silu_mul kernels: host-callable launch interface (no CUDA header needed by includers).
//   out[r, i] = silu(gate[r, i]) x up[r, i],  silu(g) = g / (1 + exp(-g))
// gate, up, out: bf16 [rows, inter] with row strides in elements, so that gate and up may be
// the two halves of one fused gate/up projection output [rows, 2 x inter] (stride 2 x inter).
// fp32 arithmetic, one rounding. Every config computes the same formula per element: the
// results are bit-identical across configs and row counts. Device code: silu_mul.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One configuration, `silu_mul.bf16:vec=8,vectors=2,threads=128`.
struct SiluMulConfig {
  int vec = 8;       // bf16 per vector load: 8 (16 bytes) or 4 (8 bytes)
  int vectors = 1;   // vectors per thread: 1, 2 or 4 (loads in flight)
  int threads = 128; // threads per CTA: 64, 128, 256 or 512
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a silu_mul config.
  static SiluMulConfig from_tactic(const Tactic &tactic);
  bool operator==(const SiluMulConfig &) const = default;
};

struct SiluMulArgs {
  const void *gate = nullptr; // bf16 [rows, inter], row stride gate_stride
  const void *up = nullptr;   // bf16 [rows, inter], row stride up_stride
  void *out = nullptr;        // bf16 [rows, inter], row stride out_stride
  int rows = 0, inter = 0;
  int64_t gate_stride = 0, up_stride = 0, out_stride = 0; // [elements]; 0: inter
  bool dependent = false; // programmatic dependent launch (common/pdl.cuh)
};

const std::vector<SiluMulConfig> &silu_mul_configs();
SiluMulConfig silu_mul_default(int rows, int inter);
// False with a reason when `config` cannot run this shape (inter not a multiple of vec, a CTA
// wider than the row).
bool silu_mul_can_implement(const SiluMulConfig &config, int rows, int inter, std::string *reason);
KernelResources silu_mul_resources(const SiluMulConfig &config);
// Enqueues one launch on `stream` (a cudaStream_t); never synchronises.
// REQUIRES: pointers and row strides aligned to vec x 2 bytes.
LaunchStatus silu_mul_launch(const SiluMulConfig &config, const SiluMulArgs &args, void *stream);

} // namespace hone::cuda

// rope kernels: host-callable launch interface (no CUDA header needed by includers).
// Rotary position embedding, half rotation (GPT-NeoX style, as Llama and Qwen2 apply it), on
// the query and key heads of every token, in place or out of place:
//   x1 = x[:D/2], x2 = x[D/2:], a_i = pos x inv_freq[i] (i < D/2)
//   out[i] = x1[i] cos a_i - x2[i] sin a_i,  out[D/2 + i] = x2[i] cos a_i + x1[i] sin a_i
// inv_freq[i] = theta^(-2i / D), optionally remapped by Llama-3.1 scaling (rope_inv_freq).
// q: bf16 [rows, hq, D], k: bf16 [rows, hkv, D], each with a row stride in elements (slices of
// a fused q/k/v projection output); positions int32 [rows]. Angles in float64, reduced to
// [-pi, pi] before a float sine and cosine; one rounding per output. Device code: rope.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One configuration, `rope.neox:vec=8,threads=128`.
struct RopeConfig {
  int vec = 8;       // bf16 per vector load of each half: 8 (16 bytes) or 4 (8 bytes)
  int threads = 128; // threads per CTA: 64, 128 or 256
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a rope config.
  static RopeConfig from_tactic(const Tactic &tactic);
  bool operator==(const RopeConfig &) const = default;
};

// The frequencies of a model's config.json: rope_theta and, for "rope_type": "llama3",
// factor, low_freq_factor, high_freq_factor and original_max_position_embeddings.
struct RopeFrequencies {
  double theta = 10000.0;
  double llama3_factor = 0; // 0: no scaling
  double llama3_low_freq_factor = 1;
  double llama3_high_freq_factor = 4;
  double llama3_original_max_positions = 8192;
  bool operator==(const RopeFrequencies &) const = default;
};

// Largest head_dim (the float64 frequencies travel in the kernel's parameters).
inline constexpr int kRopeMaxHeadDim = 256;

// inv_freq[i], i < head_dim / 2, in float64 (the Hugging Face formulas). Throws
// Error(invalid_argument) naming a bad theta, head_dim or scaling field.
std::vector<double> rope_inv_freq(const RopeFrequencies &f, int head_dim);

struct RopeArgs {
  const void *q = nullptr;            // bf16 [rows, hq, head_dim], row stride q_stride
  const void *k = nullptr;            // bf16 [rows, hkv, head_dim], row stride k_stride
  void *q_out = nullptr;              // may equal q (in place)
  void *k_out = nullptr;              // may equal k (in place)
  const int32_t *positions = nullptr; // device [rows], >= 0
  int rows = 0, hq = 0, hkv = 0, head_dim = 0;
  int64_t q_stride = 0, k_stride = 0, q_out_stride = 0, k_out_stride = 0; // 0: heads x D
  const double *inv_freq = nullptr; // host [head_dim / 2] (rope_inv_freq), copied at launch
  // Optional q/k/v bias, bf16 [(hq + 2 hkv) x head_dim]: x = bf16(x + bias) first. Needs the
  // paged append (v's share goes with v).
  const void *bias = nullptr;
  // Optional paged append (k_cache non-null): roped k and v of row r go to request r's new-token
  // slot of the paged caches (rope.cuh), k_out is not written. v: bf16 [rows, hkv, head_dim],
  // row stride v_stride (0: hkv x head_dim). The page table is read before the wait.
  const void *v = nullptr;
  int64_t v_stride = 0;
  void *k_cache = nullptr, *v_cache = nullptr;
  const int32_t *kv_indptr = nullptr, *kv_indices = nullptr, *kv_last_page_len = nullptr;
  int num_pages = 0, page_size = 0;
  // Programmatic dependent launch (common/pdl.cuh). positions are read and the angles computed
  // before griddepcontrol.wait: they must not be written by the kernel this launch depends on.
  bool dependent = false;
};

const std::vector<RopeConfig> &rope_configs();
RopeConfig rope_default(int rows, int hq, int hkv, int head_dim);
// False with a reason when `config` cannot run this shape (head_dim / 2 not a multiple of vec).
bool rope_can_implement(const RopeConfig &config, int rows, int hq, int hkv, int head_dim,
                        std::string *reason);
KernelResources rope_resources(const RopeConfig &config);
// Enqueues one launch on `stream` (a cudaStream_t); never synchronises.
// REQUIRES: pointers and strides aligned to vec x 2 bytes; an output either equal to its input
// or not overlapping it; with the append, k_cache and v_cache overlapping no input.
LaunchStatus rope_launch(const RopeConfig &config, const RopeArgs &args, void *stream);

} // namespace hone::cuda

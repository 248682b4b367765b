// A random decode or prefill step in host memory (model/step_state.h), shaped like
// DecodeStep's random one (linears uniform in +-sqrt(3 / fan-in), norm weights in [0.9, 1.1],
// biases in +-0.1, the cache and the input in +-1), for the tests of the float64 reference and
// of the export; and the small Llama-like and Qwen2-like specs they run.
//
//   hone::model::HostStep s = hone::testing::random_host_step(llama_like(), 2, 100, 16, 0, 1);
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "hone/bf16.h"
#include "hone/ops/cpu.h"
#include "model/step_state.h"

namespace hone::testing {

// 2 layers, hidden 512, 8 q heads and 2 kv heads of 64, intermediate 1024, vocab 1000, rope
// theta 500000 with Llama-3.1 scaling, untied lm_head.
inline model::ModelSpec llama_like() {
  model::ModelSpec m;
  m.name = "llama-like";
  m.family = "llama";
  m.hidden = 512;
  m.inter = 1024;
  m.hq = 8;
  m.hkv = 2;
  m.head_dim = 64;
  m.vocab = 1000;
  m.layers = 2;
  m.rms_eps = 1e-5;
  m.rope_theta = 500000;
  m.llama3_factor = 8;
  m.llama3_low_freq_factor = 1;
  m.llama3_high_freq_factor = 4;
  m.llama3_original_max_positions = 8192;
  return m;
}

// As llama_like but Qwen2: the q/k/v bias, head_dim 128 (4 q heads, 2 kv heads), rope theta
// 1e6 without scaling, the lm_head tied to the embedding.
inline model::ModelSpec qwen2_like() {
  model::ModelSpec m = llama_like();
  m.name = "qwen2-like";
  m.family = "qwen2";
  m.hq = 4;
  m.head_dim = 128;
  m.rms_eps = 1e-6;
  m.rope_theta = 1e6;
  m.llama3_factor = 0;
  m.qkv_bias = true;
  m.tie_embeddings = true;
  return m;
}

class RandomBf16 {
public:
  explicit RandomBf16(uint64_t seed) : rng_(seed) {}
  // `count` values uniform in offset +- scale.
  std::vector<uint16_t> operator()(size_t count, double scale, double offset = 0) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<uint16_t> out(count);
    for (uint16_t &v : out)
      v = float_to_bf16(static_cast<float>(offset + scale * u(rng_)));
    return out;
  }

private:
  std::mt19937_64 rng_;
};

// A linear [n, k] of random bf16 weights, affine-quantised by hone's quantizer where bits != 16.
inline model::HostLinear random_linear(RandomBf16 &random, int64_t n, int64_t k, int bits,
                                       int group) {
  model::HostLinear l;
  l.n = n;
  l.k = k;
  l.bits = bits;
  std::vector<uint16_t> w = random(static_cast<size_t>(n * k), std::sqrt(3.0 / double(k)));
  if (bits == 16) {
    l.w = std::move(w);
    return l;
  }
  l.group = group;
  std::vector<float> f(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    f[i] = bf16_to_float(w[i]);
  ops::cpu::AffineQuantized q = ops::cpu::quantize_affine(f.data(), n, k, bits, group);
  l.q = std::move(q.packed);
  l.scales = std::move(q.scales);
  l.biases = std::move(q.biases);
  return l;
}

// `new_tokens` per request (1: a decode step), token j at position `context` + j.
inline model::HostStep random_host_step(const model::ModelSpec &m, int64_t batch, int64_t context,
                                        int bits, int group, uint64_t seed,
                                        int64_t new_tokens = 1) {
  RandomBf16 random(seed);
  model::HostStep s;
  s.spec = m;
  s.batch = batch;
  s.context = context;
  s.new_tokens = new_tokens;
  s.inputs.input = random(static_cast<size_t>(batch * new_tokens * m.hidden), 1);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < new_tokens; ++j)
      s.inputs.positions.push_back(static_cast<int32_t>(context + j));
  const auto cache = static_cast<size_t>(batch * context * m.hkv * m.head_dim);
  for (int64_t i = 0; i < m.layers; ++i) {
    model::HostLayer l;
    l.qkv = random_linear(random, m.qkv_width(), m.hidden, bits, group);
    if (m.qkv_bias)
      l.qkv_bias = random(static_cast<size_t>(m.qkv_width()), 0.1);
    l.o = random_linear(random, m.hidden, m.hq * m.head_dim, bits, group);
    l.gate_up = random_linear(random, 2 * m.inter, m.hidden, bits, group);
    l.down = random_linear(random, m.hidden, m.inter, bits, group);
    l.norm1 = random(static_cast<size_t>(m.hidden), 0.1, 1);
    l.norm2 = random(static_cast<size_t>(m.hidden), 0.1, 1);
    l.k_cache = random(cache, 1);
    l.v_cache = random(cache, 1);
    s.layers.push_back(std::move(l));
  }
  s.head.final_norm = random(static_cast<size_t>(m.hidden), 0.1, 1);
  s.head.lm_head = random_linear(random, m.vocab, m.hidden, bits, group);
  return s;
}

} // namespace hone::testing

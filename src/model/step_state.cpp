#include "model/step_state.h"

#include <cmath>

#include "hone/bf16.h"
#include "hone/error.h"

namespace hone::model {

namespace {

void check_sizes(const HostLinear &l) {
  const auto elements = static_cast<size_t>(l.n * l.k);
  bool ok = l.n > 0 && l.k > 0;
  if (ok && l.bits == 16) {
    ok = l.w.size() == elements;
  } else if (ok && (l.bits == 4 || l.bits == 8)) {
    const size_t groups = l.group > 0 ? static_cast<size_t>(l.n * (l.k / l.group)) : 0;
    ok = l.group > 0 && l.k % l.group == 0 && l.q.size() * 32 == elements * size_t(l.bits) &&
         l.scales.size() == groups && l.biases.size() == groups;
  } else {
    ok = false;
  }
  if (!ok)
    HONE_INVALID_ARGUMENT("host linear [" + std::to_string(l.n) + ", " + std::to_string(l.k) +
                          "], bits " + std::to_string(l.bits) + ", group " +
                          std::to_string(l.group) + ": its buffers do not have those sizes");
}

void check_size(size_t got, int64_t want, const std::string &what) {
  if (got != static_cast<size_t>(want))
    HONE_INVALID_ARGUMENT(what + " holds " + std::to_string(got) +
                          " elements, the step's shape gives " + std::to_string(want));
}

void check_linear(const HostLinear &l, int64_t n, int64_t k, const std::string &what) {
  if (l.n != n || l.k != k)
    HONE_INVALID_ARGUMENT(what + " is [" + std::to_string(l.n) + ", " + std::to_string(l.k) +
                          "], the model's is [" + std::to_string(n) + ", " + std::to_string(k) +
                          "]");
  check_sizes(l);
}

} // namespace

void check_host_layer(const HostLayer &l, const ModelSpec &m, int64_t batch, int64_t context,
                      const std::string &what) {
  const int64_t kv = batch * context * m.hkv * m.head_dim;
  check_linear(l.qkv, m.qkv_width(), m.hidden, what + " qkv");
  check_linear(l.o, m.hidden, m.hq * m.head_dim, what + " o");
  check_linear(l.gate_up, 2 * m.inter, m.hidden, what + " gate_up");
  check_linear(l.down, m.hidden, m.inter, what + " down");
  check_size(l.qkv_bias.size(), m.qkv_bias ? m.qkv_width() : 0, what + " qkv bias");
  check_size(l.norm1.size(), m.hidden, what + " norm1");
  check_size(l.norm2.size(), m.hidden, what + " norm2");
  check_size(l.k_cache.size(), kv, what + " k cache");
  check_size(l.v_cache.size(), kv, what + " v cache");
}

void check_host_ends(const HostStepInputs &in, const HostHead &head, const ModelSpec &m,
                     int64_t rows) {
  check_size(in.input.size(), rows * m.hidden, "the input");
  check_size(in.positions.size(), rows, "the positions");
  if (!in.tokens.empty())
    check_size(in.tokens.size(), rows, "the tokens");
  check_size(head.final_norm.size(), m.hidden, "the final norm");
  check_linear(head.lm_head, m.vocab, m.hidden, "lm_head");
}

void check_host_step(const HostStep &s) {
  if (s.new_tokens < 1)
    HONE_INVALID_ARGUMENT("a host step of " + std::to_string(s.new_tokens) +
                          " new tokens per request (at least 1)");
  check_host_ends(s.inputs, s.head, s.spec, s.batch * s.new_tokens);
  check_size(s.layers.size(), s.spec.layers, "the layer list");
  for (size_t i = 0; i < s.layers.size(); ++i)
    check_host_layer(s.layers[i], s.spec, s.batch, s.context, "layer " + std::to_string(i));
}

std::vector<double> HostLinear::values() const {
  check_sizes(*this);
  std::vector<double> out(static_cast<size_t>(n * k));
  if (bits == 16) {
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = bf16_to_float(w[i]);
    return out;
  }
  const int per_word = 32 / bits;
  const uint32_t mask = (1u << bits) - 1u;
  const int64_t groups = k / group;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const auto i = static_cast<size_t>(r * k + j);
      const auto g = static_cast<size_t>(r * groups + j / group);
      const uint32_t v = (q[i / size_t(per_word)] >> ((j % per_word) * bits)) & mask;
      // v x scale has at most 8 + 8 significant bits and the sum stays far inside 53: exact.
      out[i] = double(v) * bf16_to_float(scales[g]) + bf16_to_float(biases[g]);
    }
  return out;
}

std::vector<uint16_t> HostLinear::bf16() const {
  if (bits == 16) {
    check_sizes(*this);
    return w;
  }
  const std::vector<double> v = values();
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = bf16_nearest(v[i]);
  return out;
}

uint16_t bf16_nearest(double value) {
  if (!std::isfinite(value) || value == 0)
    return float_to_bf16(static_cast<float>(value));
  // The 8 significant bits of bf16, rounded in float64 (nearest, ties to even), is a float32
  // value, converted exactly; rounding through float32 first could round twice.
  int e = 0;
  const double m = std::frexp(value, &e); // |m| in [0.5, 1)
  return float_to_bf16(static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8)));
}

std::string weight_format(int bits, int group) {
  if (bits == 16)
    return "bf16";
  return "int" + std::to_string(bits) + ":g" + std::to_string(group);
}

} // namespace hone::model

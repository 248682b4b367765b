#include "model/step_reference.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "hone/bf16.h"
#include "hone/error.h"

namespace hone::model {

namespace {

// inv_freq[i] = theta^(-2i / D), remapped by Llama-3.1 scaling (transformers'
// _compute_llama3_parameters) where the model has it.
std::vector<double> inv_freq(const ModelSpec &m) {
  std::vector<double> out(static_cast<size_t>(m.head_dim / 2));
  for (size_t i = 0; i < out.size(); ++i) {
    double f = std::pow(m.rope_theta, -2.0 * double(i) / double(m.head_dim));
    if (m.llama3_factor != 0) {
      const double low_wavelen = m.llama3_original_max_positions / m.llama3_low_freq_factor;
      const double high_wavelen = m.llama3_original_max_positions / m.llama3_high_freq_factor;
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= m.llama3_factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (m.llama3_original_max_positions / wavelen - m.llama3_low_freq_factor) /
            (m.llama3_high_freq_factor - m.llama3_low_freq_factor);
        f = (1 - smooth) * f / m.llama3_factor + smooth * f;
      }
    }
    out[i] = f;
  }
  return out;
}

// Rounds to bf16 where DecodeStep's kernels round (StepReferenceOptions::bf16_rounding), else
// passes float64 through.
struct Chain {
  bool round;
  double operator()(double v) const { return round ? double(bf16_to_float(bf16_nearest(v))) : v; }
};

// y[row, :] = r(W x[row, :]) for row < rows; W [n, k].
std::vector<double> linear(const std::vector<double> &w, int64_t n, int64_t k,
                           const std::vector<double> &x, int64_t rows, const Chain &r) {
  std::vector<double> y(static_cast<size_t>(rows * n));
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t j = 0; j < n; ++j) {
      const double *wj = w.data() + j * k, *xr = x.data() + row * k;
      double sum = 0;
      for (int64_t i = 0; i < k; ++i)
        sum += wj[i] * xr[i];
      y[static_cast<size_t>(row * n + j)] = r(sum);
    }
  return y;
}

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w.
std::vector<double> rmsnorm(const std::vector<double> &x, const std::vector<uint16_t> &w,
                            int64_t rows, double eps, const Chain &r) {
  const auto h = static_cast<int64_t>(w.size());
  std::vector<double> out(x.size());
  for (int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (int64_t i = 0; i < h; ++i)
      sum += x[static_cast<size_t>(row * h + i)] * x[static_cast<size_t>(row * h + i)];
    const double rstd = 1.0 / std::sqrt(sum / double(h) + eps);
    for (int64_t i = 0; i < h; ++i) {
      const auto at = static_cast<size_t>(row * h + i);
      out[at] = r(x[at] * rstd * bf16_to_float(w[static_cast<size_t>(i)]));
    }
  }
  return out;
}

// a[i] = r(a[i] + b[i]).
void add(std::vector<double> &a, const std::vector<double> &b, const Chain &r) {
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = r(a[i] + b[i]);
}

} // namespace

std::vector<double> bf16_values(const std::vector<uint16_t> &bits) {
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    out[i] = bf16_to_float(bits[i]);
  return out;
}

StepReferenceOutput reference_decode_step(const HostStep &s, const StepReferenceOptions &options) {
  check_host_step(s);
  const ModelSpec &m = s.spec;
  const Chain r{options.bf16_rounding};
  // Rows through the layers: row b x M + j is token j of request b (position C + j).
  const int64_t B = s.batch, M = s.new_tokens, R = B * M, C = s.context;
  const int64_t D = m.head_dim, half = D / 2, G = m.hq / m.hkv;
  const int64_t attn_width = m.hq * D, kv_width = m.hkv * D, qkv_width = m.qkv_width();
  const std::vector<double> freq = inv_freq(m);
  const double scale = 1.0 / std::sqrt(double(D));

  StepReferenceOutput out;
  std::vector<double> resid = bf16_values(s.inputs.input), mlp_out;
  for (const HostLayer &l : s.layers) {
    // The residual stream entering this layer (bf16 in the step: rmsnorm's fused add).
    if (!mlp_out.empty())
      add(resid, mlp_out, r);
    std::vector<double> xn = rmsnorm(resid, l.norm1, R, m.rms_eps, r);
    std::vector<double> qkv = linear(l.qkv.values(), qkv_width, m.hidden, xn, R, r);
    if (!l.qkv_bias.empty()) {
      for (int64_t row = 0; row < R; ++row)
        for (int64_t j = 0; j < qkv_width; ++j)
          qkv[static_cast<size_t>(row * qkv_width + j)] =
              r(qkv[static_cast<size_t>(row * qkv_width + j)] +
                bf16_to_float(l.qkv_bias[static_cast<size_t>(j)]));
    }
    // Rope on every q and k head of every new token, in place, at the token's position.
    for (int64_t row = 0; row < R; ++row) {
      const double pos = s.inputs.positions[static_cast<size_t>(row)];
      for (int64_t i = 0; i < half; ++i) {
        const double a = pos * freq[static_cast<size_t>(i)], cos_a = std::cos(a),
                     sin_a = std::sin(a);
        for (int64_t head = 0; head < m.hq + m.hkv; ++head) {
          double *x = qkv.data() + row * qkv_width + head * D;
          const double x1 = x[i], x2 = x[half + i];
          x[i] = r(x1 * cos_a - x2 * sin_a);
          x[half + i] = r(x2 * cos_a + x1 * sin_a);
        }
      }
    }
    // The new tokens' K and V, [batch, M, hkv, head_dim]: appended in order after the C cached.
    std::vector<double> &new_k = out.appended_k.emplace_back(static_cast<size_t>(R * kv_width));
    std::vector<double> &new_v = out.appended_v.emplace_back(static_cast<size_t>(R * kv_width));
    for (int64_t row = 0; row < R; ++row)
      for (int64_t j = 0; j < kv_width; ++j) {
        new_k[static_cast<size_t>(row * kv_width + j)] =
            qkv[static_cast<size_t>(row * qkv_width + attn_width + j)];
        new_v[static_cast<size_t>(row * kv_width + j)] =
            qkv[static_cast<size_t>(row * qkv_width + attn_width + kv_width + j)];
      }
    // Causal attention: token j of request b over the C cached tokens and the request's new
    // tokens 0 .. j (tokens C .. C + j of the request).
    std::vector<double> attn(static_cast<size_t>(R * attn_width));
    std::vector<double> score(static_cast<size_t>(C + M));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < M; ++j) {
        const int64_t last = C + j; // the last token this row attends to: itself
        const double *q_row = qkv.data() + (b * M + j) * qkv_width;
        for (int64_t h = 0; h < m.hq; ++h) {
          const int64_t g = h / G;
          const double *q = q_row + h * D;
          const auto cached = [&](const std::vector<uint16_t> &cache, int64_t t, int64_t i) {
            return double(
                bf16_to_float(cache[static_cast<size_t>(((b * C + t) * m.hkv + g) * D + i)]));
          };
          const auto fresh = [&](const std::vector<double> &kv, int64_t t, int64_t i) {
            return kv[static_cast<size_t>((b * M + t - C) * kv_width + g * D + i)];
          };
          const auto key = [&](int64_t t, int64_t i) {
            return t < C ? cached(l.k_cache, t, i) : fresh(new_k, t, i);
          };
          const auto value = [&](int64_t t, int64_t i) {
            return t < C ? cached(l.v_cache, t, i) : fresh(new_v, t, i);
          };
          double top = -INFINITY;
          for (int64_t t = 0; t <= last; ++t) {
            double dot = 0;
            for (int64_t i = 0; i < D; ++i)
              dot += q[i] * key(t, i);
            score[static_cast<size_t>(t)] = scale * dot;
            top = std::max(top, scale * dot);
          }
          double total = 0;
          for (int64_t t = 0; t <= last; ++t) {
            double &e = score[static_cast<size_t>(t)];
            e = std::exp(e - top);
            total += e;
          }
          for (int64_t i = 0; i < D; ++i) {
            double sum = 0;
            for (int64_t t = 0; t <= last; ++t)
              sum += score[static_cast<size_t>(t)] * value(t, i);
            attn[static_cast<size_t>((b * M + j) * attn_width + h * D + i)] = r(sum / total);
          }
        }
      }
    const std::vector<double> o = linear(l.o.values(), m.hidden, attn_width, attn, R, r);
    add(resid, o, r);
    xn = rmsnorm(resid, l.norm2, R, m.rms_eps, r);
    const std::vector<double> gate_up = linear(l.gate_up.values(), 2 * m.inter, m.hidden, xn, R, r);
    std::vector<double> act(static_cast<size_t>(R * m.inter));
    for (int64_t row = 0; row < R; ++row)
      for (int64_t i = 0; i < m.inter; ++i) {
        const double g = gate_up[static_cast<size_t>(row * 2 * m.inter + i)];
        const double u = gate_up[static_cast<size_t>(row * 2 * m.inter + m.inter + i)];
        act[static_cast<size_t>(row * m.inter + i)] = r(g / (1 + std::exp(-g)) * u);
      }
    mlp_out = linear(l.down.values(), m.hidden, m.inter, act, R, r);
  }
  // The final norm and the lm_head on each request's last token (row b x M + M - 1).
  const auto last_rows = [&](const std::vector<double> &x) {
    std::vector<double> y(static_cast<size_t>(B * m.hidden));
    for (int64_t b = 0; b < B; ++b)
      std::copy_n(x.begin() + ((b + 1) * M - 1) * m.hidden, m.hidden, y.begin() + b * m.hidden);
    return y;
  };
  std::vector<double> last_resid = last_rows(resid);
  add(last_resid, last_rows(mlp_out), r);
  out.hidden = rmsnorm(last_resid, s.head.final_norm, B, m.rms_eps, r);
  out.logits = linear(s.head.lm_head.values(), m.vocab, m.hidden, out.hidden, B, r);
  return out;
}

OutputError output_error(const std::vector<double> &got, const std::vector<double> &want) {
  if (got.size() != want.size())
    HONE_INVALID_ARGUMENT("output error: " + std::to_string(got.size()) + " values against " +
                          std::to_string(want.size()));
  OutputError e;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got[i] - want[i]);
    diff += d * d;
    norm += want[i] * want[i];
    e.want_max_abs = std::max(e.want_max_abs, std::abs(want[i]));
    if (std::isnan(d) ? e.max_abs != INFINITY : d > e.max_abs) {
      e.max_abs = std::isnan(d) ? INFINITY : d;
      e.worst = i;
      e.worst_got = got[i];
      e.worst_want = want[i];
    }
  }
  e.rel_l2 = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  if (std::isnan(e.rel_l2))
    e.rel_l2 = INFINITY;
  return e;
}

double step_reference_bound(int64_t layers) {
  const double u = 0x1p-8;
  return 3 * (u / 3) * std::sqrt(12.0 * double(layers) + 3);
}

} // namespace hone::model

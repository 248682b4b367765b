#include "model/decode_step.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"
#include "model/step_kernels.h"

namespace hone::model {

using cuda::DeviceBuffer;
namespace ops = hone::ops::cuda;

const char *to_string(StepOp op) {
  switch (op) {
  case StepOp::rmsnorm: return "rmsnorm";
  case StepOp::qkv: return "qkv";
  case StepOp::rope: return "rope";
  case StepOp::kv_append: return "kv_append";
  case StepOp::attention: return "decode.paged";
  case StepOp::o_proj: return "o_proj";
  case StepOp::gate_up: return "gate_up";
  case StepOp::silu_mul: return "silu_mul";
  case StepOp::down: return "down";
  case StepOp::lm_head: return "lm_head";
  }
  return "?";
}

namespace {

constexpr size_t kBf16 = 2;

void validate(const ModelSpec &m, const StepOptions &o) {
  if (o.batch < 1 || o.batch > 32)
    HONE_INVALID_ARGUMENT("decode step: batch " + std::to_string(o.batch) +
                          " is outside 1..32 (the decode linears run gemv / qmv)");
  if (o.context < 1)
    HONE_INVALID_ARGUMENT("decode step: context " + std::to_string(o.context) +
                          " must be at least 1 token");
  if (o.bits != 16 && o.bits != 4 && o.bits != 8)
    HONE_INVALID_ARGUMENT("decode step: weight bits " + std::to_string(o.bits) +
                          " is not one of 16 (bf16), 4, 8");
  if (o.bits != 16) {
    if (o.group != 32 && o.group != 64 && o.group != 128)
      HONE_INVALID_ARGUMENT("decode step: group " + std::to_string(o.group) +
                            " is not one of 32, 64, 128");
    for (int64_t k : {m.hidden, m.hq * m.head_dim, m.inter})
      if (k % o.group != 0)
        HONE_INVALID_ARGUMENT("decode step: " + m.name + " has a linear of K = " +
                              std::to_string(k) + ", not a multiple of the group " +
                              std::to_string(o.group));
  }
  if (o.page_size != 16 && o.page_size != 32 && o.page_size != 64)
    HONE_INVALID_ARGUMENT("decode step: page size " + std::to_string(o.page_size) +
                          " is not one of 16, 32, 64");
}

size_t linear_bytes(int64_t n, int64_t k, const StepOptions &o) {
  if (o.bits == 16)
    return size_t(n) * size_t(k) * kBf16;
  return size_t(n) * size_t(k) * size_t(o.bits) / 8 + 2 * size_t(n) * size_t(k / o.group) * kBf16;
}

int64_t pages_per_request(const StepOptions &o) {
  return (o.context + 1 + o.page_size - 1) / o.page_size;
}

} // namespace

struct Linear {
  int64_t n = 0, k = 0;
  void *w = nullptr; // bf16 [n, k]
  uint32_t *q = nullptr;
  void *scales = nullptr, *biases = nullptr;
};

struct Layer {
  Linear qkv, o, gate_up, down;
  void *norm1 = nullptr, *norm2 = nullptr, *qkv_bias = nullptr;
  void *k_cache = nullptr, *v_cache = nullptr;
};

struct DecodeStep::State {
  ModelSpec spec;
  StepOptions opt;
  std::vector<DeviceBuffer> buffers;
  size_t allocated = 0;
  uint64_t fills = 0;
  std::vector<Layer> layers;
  Linear lm_head;
  void *final_norm = nullptr;
  // Activations.
  void *input = nullptr, *resid = nullptr, *xn = nullptr, *qkv = nullptr, *q = nullptr,
       *k = nullptr, *attn = nullptr, *o_out = nullptr, *gate_up = nullptr, *act = nullptr,
       *mlp_out = nullptr, *hidden_out = nullptr, *logits = nullptr;
  // Page table (device and host), positions.
  int32_t *indptr = nullptr, *indices = nullptr, *last = nullptr, *positions = nullptr;
  std::vector<int32_t> indptr_host, last_host;
  int64_t num_pages = 0;

  void *alloc(size_t bytes) {
    buffers.emplace_back(bytes);
    allocated += bytes;
    return buffers.back().data();
  }
  uint64_t next_seed() { return opt.seed * 0x9e3779b97f4a7c15ull + (++fills); }
  void *bf16(size_t count, float scale, float offset, cudaStream_t s) {
    void *p = alloc(count * kBf16);
    fill_uniform_bf16(p, count, next_seed(), scale, offset, s);
    return p;
  }
  Linear linear(int64_t n, int64_t k, cudaStream_t s) {
    Linear l{n, k};
    if (opt.bits == 16) {
      l.w = bf16(size_t(n) * size_t(k), std::sqrt(3.0f / float(k)), 0.0f, s);
    } else {
      const size_t words = size_t(n) * size_t(k) * size_t(opt.bits) / 32;
      l.q = static_cast<uint32_t *>(alloc(words * 4));
      cuda::fill_random_u32(l.q, words, next_seed(), s);
      const size_t params = size_t(n) * size_t(k / opt.group);
      l.scales = alloc(params * kBf16);
      l.biases = alloc(params * kBf16);
      cuda::fill_random_affine_params(l.scales, l.biases, params, opt.bits, next_seed(), s);
    }
    return l;
  }
};

size_t decode_step_bytes(const ModelSpec &m, const StepOptions &o) {
  const int64_t attn_width = m.hq * m.head_dim;
  size_t per_layer = linear_bytes(m.qkv_width(), m.hidden, o) +
                     linear_bytes(m.hidden, attn_width, o) +
                     linear_bytes(2 * m.inter, m.hidden, o) + linear_bytes(m.hidden, m.inter, o) +
                     2 * size_t(m.hidden) * kBf16 + (m.qkv_bias ? size_t(m.qkv_width()) * kBf16 : 0);
  const size_t pages = size_t(o.batch * pages_per_request(o));
  per_layer += 2 * pages * size_t(o.page_size * m.hkv * m.head_dim) * kBf16;
  const size_t acts = size_t(o.batch) * kBf16 *
                      size_t(6 * m.hidden + m.qkv_width() + 2 * attn_width + m.hkv * m.head_dim +
                             3 * m.inter + m.vocab);
  return size_t(m.layers) * per_layer + linear_bytes(m.vocab, m.hidden, o) +
         size_t(m.hidden) * kBf16 + acts + pages * 4 + size_t(o.batch) * 12 + 64;
}

DecodeStep::DecodeStep(const ModelSpec &spec, const StepOptions &options)
    : s_(std::make_unique<State>()) {
  validate(spec, options);
  State &st = *s_;
  st.spec = spec;
  st.opt = options;
  const size_t need = decode_step_bytes(spec, options);
  size_t free_bytes = 0, total_bytes = 0;
  HONE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (need > free_bytes)
    HONE_RUNTIME_ERROR("decode step: " + spec.name + " at batch " +
                       std::to_string(options.batch) + ", context " +
                       std::to_string(options.context) + " needs " + std::to_string(need) +
                       " bytes of device memory; the device has " + std::to_string(free_bytes) +
                       " free of " + std::to_string(total_bytes));
  cudaStream_t s = nullptr;
  const ModelSpec &m = spec;
  const int64_t B = options.batch;
  const int64_t attn_width = m.hq * m.head_dim;
  const int64_t ppr = pages_per_request(options);
  st.num_pages = B * ppr;
  const size_t cache_elems = size_t(st.num_pages * options.page_size * m.hkv * m.head_dim);
  for (int64_t i = 0; i < m.layers; ++i) {
    Layer l;
    l.norm1 = st.bf16(size_t(m.hidden), 0.1f, 1.0f, s);
    l.qkv = st.linear(m.qkv_width(), m.hidden, s);
    if (m.qkv_bias)
      l.qkv_bias = st.bf16(size_t(m.qkv_width()), 0.1f, 0.0f, s);
    l.o = st.linear(m.hidden, attn_width, s);
    l.norm2 = st.bf16(size_t(m.hidden), 0.1f, 1.0f, s);
    l.gate_up = st.linear(2 * m.inter, m.hidden, s);
    l.down = st.linear(m.hidden, m.inter, s);
    l.k_cache = st.bf16(cache_elems, 1.0f, 0.0f, s);
    l.v_cache = st.bf16(cache_elems, 1.0f, 0.0f, s);
    st.layers.push_back(l);
  }
  st.final_norm = st.bf16(size_t(m.hidden), 0.1f, 1.0f, s);
  st.lm_head = st.linear(m.vocab, m.hidden, s);
  const size_t b = size_t(B);
  st.input = st.bf16(b * size_t(m.hidden), 1.0f, 0.0f, s);
  st.resid = st.alloc(b * size_t(m.hidden) * kBf16);
  st.xn = st.alloc(b * size_t(m.hidden) * kBf16);
  st.qkv = st.alloc(b * size_t(m.qkv_width()) * kBf16);
  st.q = st.alloc(b * size_t(attn_width) * kBf16);
  st.k = st.alloc(b * size_t(m.hkv * m.head_dim) * kBf16);
  st.attn = st.alloc(b * size_t(attn_width) * kBf16);
  st.o_out = st.alloc(b * size_t(m.hidden) * kBf16);
  st.gate_up = st.alloc(b * size_t(2 * m.inter) * kBf16);
  st.act = st.alloc(b * size_t(m.inter) * kBf16);
  st.mlp_out = st.alloc(b * size_t(m.hidden) * kBf16);
  st.hidden_out = st.alloc(b * size_t(m.hidden) * kBf16);
  st.logits = st.alloc(b * size_t(m.vocab) * kBf16);

  // Page table: every request holds context + 1 tokens (the new one included) on pages drawn
  // from a seeded shuffle of the pool, so that no request reads its pages in address order.
  std::vector<int32_t> indices(size_t(st.num_pages));
  std::iota(indices.begin(), indices.end(), 0);
  std::mt19937_64 rng(options.seed);
  std::shuffle(indices.begin(), indices.end(), rng);
  st.indptr_host.resize(b + 1);
  st.last_host.assign(b, int32_t(options.context + 1 - (ppr - 1) * options.page_size));
  for (int64_t r = 0; r <= B; ++r)
    st.indptr_host[size_t(r)] = int32_t(r * ppr);
  const std::vector<int32_t> positions(b, int32_t(options.context));
  st.indptr = static_cast<int32_t *>(st.alloc((b + 1) * 4));
  st.indices = static_cast<int32_t *>(st.alloc(indices.size() * 4));
  st.last = static_cast<int32_t *>(st.alloc(b * 4));
  st.positions = static_cast<int32_t *>(st.alloc(b * 4));
  HONE_CUDA_CHECK(cudaMemcpy(st.indptr, st.indptr_host.data(), (b + 1) * 4, cudaMemcpyHostToDevice));
  HONE_CUDA_CHECK(cudaMemcpy(st.indices, indices.data(), indices.size() * 4, cudaMemcpyHostToDevice));
  HONE_CUDA_CHECK(cudaMemcpy(st.last, st.last_host.data(), b * 4, cudaMemcpyHostToDevice));
  HONE_CUDA_CHECK(cudaMemcpy(st.positions, positions.data(), b * 4, cudaMemcpyHostToDevice));
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
}

DecodeStep::~DecodeStep() = default;

void DecodeStep::enqueue(void *stream, Dispatcher &d, bool pdl) { run(nullptr, stream, d, pdl); }

void DecodeStep::enqueue_only(StepOp op, void *stream, Dispatcher &d, bool pdl) {
  run(&op, stream, d, pdl);
}

void DecodeStep::run(const StepOp *only, void *stream, Dispatcher &d, bool pdl) {
  State &st = *s_;
  const ModelSpec &m = st.spec;
  const StepOptions &o = st.opt;
  const int64_t B = o.batch;
  const int64_t attn_width = m.hq * m.head_dim;
  auto on = [&](StepOp op) { return only == nullptr || *only == op; };
  const ops::ChainLaunch chain{pdl};
  auto linear = [&](const Linear &l, const void *x, void *y) {
    if (o.bits == 16)
      ops::gemv_bf16(x, l.w, y, B, l.n, l.k, stream, d, chain);
    else
      ops::quantized_linear(x, l.q, l.scales, l.biases, y, B, l.n, l.k, o.bits, o.group, stream,
                            d, chain);
  };
  auto norm = [&](const void *x, const void *residual, void *residual_out, const void *w,
                  void *out) {
    ops::RmsnormTensors t;
    t.x = x;
    t.residual = residual;
    t.residual_out = residual_out;
    t.w = w;
    t.out = out;
    t.rows = B;
    t.hidden = m.hidden;
    t.eps = float(m.rms_eps);
    t.dependent = pdl;
    ops::rmsnorm(t, stream, d);
  };
  // One plan per step: every layer has the same lengths, heads and page size.
  ops::DecodePagedPlan plan;
  if (on(StepOp::attention))
    plan = ops::decode_paged_plan(st.indptr_host.data(), st.last_host.data(), B, m.hq, m.hkv,
                                  m.head_dim, o.page_size, d);
  char *qkv = static_cast<char *>(st.qkv);
  for (size_t i = 0; i < st.layers.size(); ++i) {
    const Layer &l = st.layers[i];
    if (on(StepOp::rmsnorm)) {
      if (i == 0)
        norm(st.input, nullptr, nullptr, l.norm1, st.xn);
      else
        norm(st.mlp_out, st.resid, st.resid, l.norm1, st.xn);
    }
    if (on(StepOp::qkv)) {
      linear(l.qkv, st.xn, st.qkv);
      if (l.qkv_bias)
        add_bias_bf16(st.qkv, l.qkv_bias, B, m.qkv_width(), static_cast<cudaStream_t>(stream));
    }
    if (on(StepOp::rope)) {
      ops::RopeTensors t;
      t.q = qkv;
      t.k = qkv + size_t(attn_width) * kBf16;
      t.q_out = st.q;
      t.k_out = st.k;
      t.positions = st.positions;
      t.rows = B;
      t.hq = m.hq;
      t.hkv = m.hkv;
      t.head_dim = m.head_dim;
      t.q_stride = t.k_stride = m.qkv_width();
      t.theta = m.rope_theta;
      t.llama3_factor = m.llama3_factor;
      t.llama3_low_freq_factor = m.llama3_low_freq_factor;
      t.llama3_high_freq_factor = m.llama3_high_freq_factor;
      t.llama3_original_max_positions = m.llama3_original_max_positions;
      t.dependent = pdl;
      ops::rope(t, stream, d);
    }
    if (on(StepOp::kv_append)) {
      ops::KvAppendTensors t;
      t.k = st.k;
      t.v = qkv + size_t(attn_width + m.hkv * m.head_dim) * kBf16;
      t.v_stride = m.qkv_width();
      t.k_cache = l.k_cache;
      t.v_cache = l.v_cache;
      t.kv_indptr = st.indptr;
      t.kv_indices = st.indices;
      t.kv_last_page_len = st.last;
      t.batch = B;
      t.num_pages = st.num_pages;
      t.hkv = m.hkv;
      t.head_dim = m.head_dim;
      t.page_size = o.page_size;
      t.dependent = pdl;
      ops::kv_append(t, stream, d);
    }
    if (on(StepOp::attention)) {
      ops::DecodePagedTensors t;
      t.q = st.q;
      t.k_cache = l.k_cache;
      t.v_cache = l.v_cache;
      t.kv_indptr = st.indptr;
      t.kv_indices = st.indices;
      t.kv_last_page_len = st.last;
      t.o = st.attn;
      t.batch = B;
      t.num_pages = st.num_pages;
      t.hq = m.hq;
      t.hkv = m.hkv;
      t.head_dim = m.head_dim;
      t.page_size = o.page_size;
      t.scale = 1.0f / std::sqrt(float(m.head_dim));
      t.kv_indptr_host = st.indptr_host.data();
      t.kv_last_page_len_host = st.last_host.data();
      t.dependent = pdl;
      ops::decode_paged(t, plan, stream);
    }
    if (on(StepOp::o_proj))
      linear(l.o, st.attn, st.o_out);
    if (on(StepOp::rmsnorm))
      norm(st.o_out, i == 0 ? st.input : st.resid, st.resid, l.norm2, st.xn);
    if (on(StepOp::gate_up))
      linear(l.gate_up, st.xn, st.gate_up);
    if (on(StepOp::silu_mul)) {
      ops::SiluMulTensors t;
      t.gate_up = st.gate_up;
      t.out = st.act;
      t.rows = B;
      t.inter = m.inter;
      t.dependent = pdl;
      ops::silu_mul(t, stream, d);
    }
    if (on(StepOp::down))
      linear(l.down, st.act, st.mlp_out);
  }
  if (on(StepOp::rmsnorm))
    norm(st.mlp_out, st.resid, st.resid, st.final_norm, st.hidden_out);
  if (on(StepOp::lm_head))
    linear(st.lm_head, st.hidden_out, st.logits);
}

const void *DecodeStep::logits() const { return s_->logits; }
const void *DecodeStep::hidden() const { return s_->hidden_out; }
size_t DecodeStep::logits_elements() const { return size_t(s_->opt.batch * s_->spec.vocab); }
size_t DecodeStep::hidden_elements() const { return size_t(s_->opt.batch * s_->spec.hidden); }
const ModelSpec &DecodeStep::spec() const { return s_->spec; }
const StepOptions &DecodeStep::options() const { return s_->opt; }
size_t DecodeStep::device_bytes() const { return s_->allocated; }

size_t DecodeStep::weight_bytes() const {
  const ModelSpec &m = s_->spec;
  const StepOptions &o = s_->opt;
  const size_t per_layer = linear_bytes(m.qkv_width(), m.hidden, o) +
                           linear_bytes(m.hidden, m.hq * m.head_dim, o) +
                           linear_bytes(2 * m.inter, m.hidden, o) +
                           linear_bytes(m.hidden, m.inter, o) + 2 * size_t(m.hidden) * kBf16 +
                           (m.qkv_bias ? size_t(m.qkv_width()) * kBf16 : 0);
  return size_t(m.layers) * per_layer + linear_bytes(m.vocab, m.hidden, o) +
         size_t(m.hidden) * kBf16;
}

size_t DecodeStep::kv_bytes() const {
  const ModelSpec &m = s_->spec;
  const StepOptions &o = s_->opt;
  return size_t(m.layers) * size_t(o.batch) * size_t(o.context + 1) * 2 *
         size_t(m.hkv * m.head_dim) * kBf16;
}

} // namespace hone::model

#include "model/decode_step.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"
#include "cuda/kernels/common/chain_settings.h"
#include "cuda/peers/cublaslt_bf16_gemm.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"
#include "model/affine_quantize.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "model/step_export.h"
#include "model/step_kernels.h"

namespace hone::model {

using cuda::DeviceBuffer;
namespace ops = hone::ops::cuda;

namespace {

constexpr size_t kBf16 = 2;
// Rows of a prefill step: decode.paged and kv_append take at most this many requests, and a
// prefill step's rows are its requests.
constexpr int64_t kMaxPrefillRows = 4096;
// gemv.bf16's most rows; a bf16 step above them runs cuBLASLt's GEMM.
constexpr int64_t kMaxGemvRows = 32;

// New tokens per request, and rows through the layers.
int64_t new_tokens(const StepOptions &o) { return o.prefill > 0 ? o.prefill : 1; }
int64_t step_rows(const StepOptions &o) { return o.batch * new_tokens(o); }

void validate(const ModelSpec &m, const StepOptions &o) {
  if (o.batch < 1 || o.batch > kMaxStepBatch)
    HONE_INVALID_ARGUMENT("decode step: batch " + std::to_string(o.batch) + " is outside 1.." +
                          std::to_string(kMaxStepBatch) + " (the decode linears run gemv / qmv)");
  if (o.prefill < 0 || o.batch * o.prefill > kMaxPrefillRows)
    HONE_INVALID_ARGUMENT(
        "prefill step: " + std::to_string(o.prefill) + " tokens per request at batch " +
        std::to_string(o.batch) + " is outside 0.." + std::to_string(kMaxPrefillRows / o.batch) +
        " (batch x prefill rows at most " + std::to_string(kMaxPrefillRows) + ")");
  if (o.context < (o.prefill > 0 ? 0 : 1))
    HONE_INVALID_ARGUMENT("decode step: context " + std::to_string(o.context) +
                          (o.prefill > 0 ? " must not be negative"
                                         : " must be at least 1 token (a prefill may start at 0)"));
  if (o.bits != 16 && o.bits != 4 && o.bits != 8)
    HONE_INVALID_ARGUMENT("decode step: weight bits " + std::to_string(o.bits) +
                          " is not one of 16 (bf16), 4, 8");
  if (o.bits != 16) {
    if (o.group != 32 && o.group != 64 && o.group != 128)
      HONE_INVALID_ARGUMENT("decode step: group " + std::to_string(o.group) +
                            " is not one of 32, 64, 128");
    for (int64_t k : {m.hidden, m.hq * m.head_dim, m.inter})
      if (k % o.group != 0)
        HONE_INVALID_ARGUMENT("decode step: " + m.name +
                              " has a linear of K = " + std::to_string(k) +
                              ", not a multiple of the group " + std::to_string(o.group));
  }
  if (o.page_size != 16 && o.page_size != 32 && o.page_size != 64)
    HONE_INVALID_ARGUMENT("decode step: page size " + std::to_string(o.page_size) +
                          " is not one of 16, 32, 64");
}

int64_t pages_per_request(const StepOptions &o) {
  return (o.context + new_tokens(o) + o.page_size - 1) / o.page_size;
}

template <class T> std::vector<T> to_host(const void *device, size_t count) {
  std::vector<T> out(count);
  HONE_CUDA_CHECK(cudaMemcpy(out.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}

} // namespace

size_t linear_read_bytes(int64_t n, int64_t k, const StepOptions &o) {
  if (o.bits == 16)
    return size_t(n) * size_t(k) * kBf16;
  return size_t(n) * size_t(k) * size_t(o.bits) / 8 + 2 * size_t(n) * size_t(k / o.group) * kBf16;
}

size_t step_weight_bytes(const ModelSpec &m, const StepOptions &o) {
  const size_t per_layer = linear_read_bytes(m.qkv_width(), m.hidden, o) +
                           linear_read_bytes(m.hidden, m.hq * m.head_dim, o) +
                           linear_read_bytes(2 * m.inter, m.hidden, o) +
                           linear_read_bytes(m.hidden, m.inter, o) + 2 * size_t(m.hidden) * kBf16 +
                           (m.qkv_bias ? size_t(m.qkv_width()) * kBf16 : 0);
  return size_t(m.layers) * per_layer + linear_read_bytes(m.vocab, m.hidden, o) +
         size_t(m.hidden) * kBf16;
}

size_t step_kv_bytes(const ModelSpec &m, const StepOptions &o) {
  return size_t(m.layers) * size_t(o.batch) * size_t(o.context + new_tokens(o)) * 2 *
         size_t(m.hkv * m.head_dim) * kBf16;
}

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
  // A prefill's last token of each request, gathered for the final norm.
  void *last_mlp = nullptr, *last_resid = nullptr;
  // The fused norms' counters (ops::cuda::quantized_linear_rmsnorm): o_proj's and down's of each
  // layer, zero between launches.
  unsigned *norm_counters = nullptr;
  // Page table (device and host), positions; the tokens the input embeds (real weights). A
  // prefill step's table has one request per row (token j of request b: a prefix of b's pages,
  // context + j + 1 tokens long); `pages_host` is each real request's pages.
  int32_t *indptr = nullptr, *indices = nullptr, *last = nullptr, *positions = nullptr;
  std::vector<int32_t> indptr_host, indices_host, last_host, positions_host, tokens, pages_host;
  int64_t num_pages = 0;
  // bf16 linears above gemv.bf16's rows: one planned cuBLASLt GEMM per (n, k).
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<cuda::CublasLtBf16Gemm>> gemms;

  void *alloc(size_t bytes) {
    buffers.emplace_back(bytes);
    allocated += bytes;
    return buffers.back().data();
  }
  // Tokens [first, first + count) of every request, gathered from the pages of `cache`:
  // [batch, count, hkv, head_dim].
  std::vector<uint16_t> gather_tokens(const void *cache, int64_t first, int64_t count) const {
    const int64_t P = opt.page_size, row = spec.hkv * spec.head_dim;
    const std::vector<uint16_t> pages = to_host<uint16_t>(cache, size_t(num_pages * P * row));
    std::vector<uint16_t> out(size_t(opt.batch * count * row));
    const int64_t ppr = pages_per_request(opt);
    for (int64_t b = 0; b < opt.batch; ++b)
      for (int64_t t = 0; t < count; ++t) {
        const int64_t token = first + t;
        const int64_t page = pages_host[size_t(b * ppr + token / P)];
        std::copy_n(pages.begin() + ptrdiff_t((page * P + token % P) * row), row,
                    out.begin() + ptrdiff_t((b * count + t) * row));
      }
    return out;
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
  template <class T> T *upload(const std::vector<T> &host) {
    auto *p = static_cast<T *>(alloc(host.size() * sizeof(T)));
    HONE_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
  }
  // A linear of checkpoint weights w bf16 [n, k]: as they are, or quantised on the device
  // (through `scratch`, grown to the largest matrix).
  Linear linear(const std::vector<uint16_t> &w, int64_t n, int64_t k, DeviceBuffer &scratch,
                cudaStream_t s) {
    Linear l{n, k};
    if (opt.bits == 16) {
      l.w = upload(w);
      return l;
    }
    const size_t bytes = w.size() * kBf16;
    if (scratch.size() < bytes)
      scratch = DeviceBuffer(bytes);
    // The copy waits for the quantisation of the previous matrix (both on the legacy stream).
    HONE_CUDA_CHECK(cudaMemcpy(scratch.data(), w.data(), bytes, cudaMemcpyHostToDevice));
    l.q = static_cast<uint32_t *>(alloc(size_t(n) * size_t(k) * size_t(opt.bits) / 8));
    const size_t params = size_t(n) * size_t(k / opt.group);
    l.scales = alloc(params * kBf16);
    l.biases = alloc(params * kBf16);
    quantize_affine_bf16(scratch.data(), l.q, l.scales, l.biases, n, k, opt.bits, opt.group, s);
    return l;
  }
};

size_t decode_step_bytes(const ModelSpec &m, const StepOptions &o) {
  const int64_t attn_width = m.hq * m.head_dim;
  const size_t pages = size_t(o.batch * pages_per_request(o));
  const size_t cache =
      size_t(m.layers) * 2 * pages * size_t(o.page_size * m.hkv * m.head_dim) * kBf16;
  const size_t rows = size_t(step_rows(o));
  const size_t acts =
      rows * kBf16 *
          size_t(5 * m.hidden + m.qkv_width() + 2 * attn_width + m.hkv * m.head_dim + 3 * m.inter) +
      size_t(o.batch) * kBf16 * size_t(3 * m.hidden + m.vocab);
  // The page table: every row's prefix of its request's pages, and the indptr / last / position.
  const size_t table = rows * size_t(pages_per_request(o)) * 4 + rows * 12;
  // cuBLASLt's workspaces of a bf16 prefill (one per linear shape).
  const size_t gemm =
      o.bits == 16 && rows > size_t(kMaxGemvRows) ? 5 * cuda::kCublasLtWorkspaceBytes : 0;
  return step_weight_bytes(m, o) + cache + acts + table + gemm + 64;
}

DecodeStep::DecodeStep(const ModelSpec &spec, const StepOptions &options)
    : s_(std::make_unique<State>()) {
  validate(spec, options);
  State &st = *s_;
  st.spec = spec;
  st.opt = options;
  // A checkpoint quantised on the device passes through a scratch copy of its largest matrix.
  const size_t scratch_bytes =
      options.weights.empty() || options.bits == 16
          ? 0
          : size_t(std::max({spec.qkv_width(), 2 * spec.inter, spec.vocab}) * spec.hidden) * kBf16;
  const size_t need = decode_step_bytes(spec, options) + scratch_bytes;
  size_t free_bytes = 0, total_bytes = 0;
  HONE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (need > free_bytes)
    HONE_RUNTIME_ERROR("decode step: " + spec.name + " at batch " + std::to_string(options.batch) +
                       ", context " + std::to_string(options.context) + " needs " +
                       std::to_string(need) + " bytes of device memory; the device has " +
                       std::to_string(free_bytes) + " free of " + std::to_string(total_bytes));
  cudaStream_t s = nullptr;
  const ModelSpec &m = spec;
  const int64_t B = options.batch;
  const int64_t attn_width = m.hq * m.head_dim;
  const int64_t ppr = pages_per_request(options);
  st.num_pages = B * ppr;
  const size_t cache_elems = size_t(st.num_pages * options.page_size * m.hkv * m.head_dim);
  std::optional<Checkpoint> checkpoint;
  if (!options.weights.empty())
    checkpoint = Checkpoint::open(options.weights);
  DeviceBuffer scratch;
  for (int64_t i = 0; i < m.layers; ++i) {
    Layer l;
    if (checkpoint) {
      const LayerWeights w = layer_weights(checkpoint->files(), m, i);
      l.norm1 = st.upload(w.norm1);
      l.qkv = st.linear(w.qkv, m.qkv_width(), m.hidden, scratch, s);
      if (m.qkv_bias)
        l.qkv_bias = st.upload(w.qkv_bias);
      l.o = st.linear(w.o, m.hidden, attn_width, scratch, s);
      l.norm2 = st.upload(w.norm2);
      l.gate_up = st.linear(w.gate_up, 2 * m.inter, m.hidden, scratch, s);
      l.down = st.linear(w.down, m.hidden, m.inter, scratch, s);
    } else {
      l.norm1 = st.bf16(size_t(m.hidden), 0.1f, 1.0f, s);
      l.qkv = st.linear(m.qkv_width(), m.hidden, s);
      if (m.qkv_bias)
        l.qkv_bias = st.bf16(size_t(m.qkv_width()), 0.1f, 0.0f, s);
      l.o = st.linear(m.hidden, attn_width, s);
      l.norm2 = st.bf16(size_t(m.hidden), 0.1f, 1.0f, s);
      l.gate_up = st.linear(2 * m.inter, m.hidden, s);
      l.down = st.linear(m.hidden, m.inter, s);
    }
    l.k_cache = st.bf16(cache_elems, 1.0f, 0.0f, s);
    l.v_cache = st.bf16(cache_elems, 1.0f, 0.0f, s);
    st.layers.push_back(l);
  }
  const size_t b = size_t(B);
  const int64_t T = new_tokens(options);
  const size_t rows = size_t(step_rows(options));
  if (checkpoint) {
    const std::vector<const SafetensorsFile *> files = checkpoint->files();
    st.final_norm = st.upload(read_bf16(files, "model.norm.weight", {m.hidden}));
    // The input: the embedding rows of seeded random tokens.
    std::vector<uint16_t> embedding =
        read_bf16(files, "model.embed_tokens.weight", {m.vocab, m.hidden});
    std::mt19937_64 token_rng(options.seed ^ 0x746f6b656e73ull);
    std::uniform_int_distribution<int64_t> token(0, m.vocab - 1);
    std::vector<uint16_t> input(rows * size_t(m.hidden));
    for (size_t r = 0; r < rows; ++r) {
      st.tokens.push_back(int32_t(token(token_rng)));
      std::copy_n(embedding.begin() + ptrdiff_t(size_t(st.tokens.back()) * size_t(m.hidden)),
                  m.hidden, input.begin() + ptrdiff_t(r * size_t(m.hidden)));
    }
    if (!m.tie_embeddings) {
      std::vector<uint16_t>().swap(embedding); // one table in host memory at a time
      embedding = read_bf16(files, "lm_head.weight", {m.vocab, m.hidden});
    }
    st.lm_head = st.linear(embedding, m.vocab, m.hidden, scratch, s);
    st.input = st.upload(input);
  } else {
    st.final_norm = st.bf16(size_t(m.hidden), 0.1f, 1.0f, s);
    st.lm_head = st.linear(m.vocab, m.hidden, s);
    st.input = st.bf16(rows * size_t(m.hidden), 1.0f, 0.0f, s);
  }
  st.resid = st.alloc(rows * size_t(m.hidden) * kBf16);
  st.xn = st.alloc(rows * size_t(m.hidden) * kBf16);
  st.norm_counters = static_cast<unsigned *>(st.alloc(2 * st.layers.size() * sizeof(unsigned)));
  HONE_CUDA_CHECK(cudaMemset(st.norm_counters, 0, 2 * st.layers.size() * sizeof(unsigned)));
  st.qkv = st.alloc(rows * size_t(m.qkv_width()) * kBf16);
  st.q = st.alloc(rows * size_t(attn_width) * kBf16);
  st.k = st.alloc(rows * size_t(m.hkv * m.head_dim) * kBf16);
  st.attn = st.alloc(rows * size_t(attn_width) * kBf16);
  st.o_out = st.alloc(rows * size_t(m.hidden) * kBf16);
  st.gate_up = st.alloc(rows * size_t(2 * m.inter) * kBf16);
  st.act = st.alloc(rows * size_t(m.inter) * kBf16);
  st.mlp_out = st.alloc(rows * size_t(m.hidden) * kBf16);
  if (options.prefill > 0) {
    st.last_mlp = st.alloc(b * size_t(m.hidden) * kBf16);
    st.last_resid = st.alloc(b * size_t(m.hidden) * kBf16);
  }
  st.hidden_out = st.alloc(b * size_t(m.hidden) * kBf16);
  st.logits = st.alloc(b * size_t(m.vocab) * kBf16);
  if (options.bits == 16 && int64_t(rows) > kMaxGemvRows)
    for (const auto &[n, k] : {std::pair{m.qkv_width(), m.hidden}, std::pair{m.hidden, attn_width},
                               std::pair{2 * m.inter, m.hidden}, std::pair{m.hidden, m.inter}})
      if (!st.gemms.count({n, k}))
        st.gemms[{n, k}] = std::make_unique<cuda::CublasLtBf16Gemm>(int(rows), int(n), int(k));

  // Page table: every request holds context + its new tokens on pages drawn from a seeded
  // shuffle of the pool, so that no request reads its pages in address order. Row (b, j) of
  // the step (token j of request b, at position context + j) is a request of the table over
  // the first pages of b that hold its context + j + 1 tokens; a decode step has one row per
  // request, over all of its pages.
  st.pages_host.resize(size_t(st.num_pages));
  std::iota(st.pages_host.begin(), st.pages_host.end(), 0);
  std::mt19937_64 rng(options.seed);
  std::shuffle(st.pages_host.begin(), st.pages_host.end(), rng);
  const int64_t P = options.page_size;
  st.indptr_host.assign(1, 0);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t j = 0; j < T; ++j) {
      const int64_t len = options.context + j + 1, pages = (len + P - 1) / P;
      st.indices_host.insert(st.indices_host.end(), st.pages_host.begin() + ptrdiff_t(r * ppr),
                             st.pages_host.begin() + ptrdiff_t(r * ppr + pages));
      st.indptr_host.push_back(int32_t(st.indices_host.size()));
      st.last_host.push_back(int32_t(len - (pages - 1) * P));
      st.positions_host.push_back(int32_t(options.context + j));
    }
  st.indptr = st.upload(st.indptr_host);
  st.indices = st.upload(st.indices_host);
  st.last = st.upload(st.last_host);
  st.positions = st.upload(st.positions_host);
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
}

DecodeStep::~DecodeStep() = default;

void DecodeStep::enqueue(void *stream, Dispatcher &d, bool pdl) {
  run(nullptr, stream, d,
      StepLaunch{pdl, 0, s_->opt.fuse_rope_append, false, s_->opt.fuse_silu_mul,
                 s_->opt.fuse_norm});
}

void DecodeStep::enqueue(void *stream, Dispatcher &d, const StepLaunch &launch) {
  run(nullptr, stream, d, launch);
}

void DecodeStep::enqueue_only(StepOp op, void *stream, Dispatcher &d, bool pdl) {
  run(&op, stream, d, StepLaunch{pdl, 0, s_->opt.fuse_rope_append});
}

void DecodeStep::run(const StepOp *only, void *stream, Dispatcher &d, const StepLaunch &launch) {
  const bool pdl = launch.pdl;
  const bool fuse = launch.fuse_rope_append;
  const cuda::ScopedChainSettings chain_settings(pdl ? launch.shared_carveout : -1,
                                                 pdl && launch.early_trigger);
  State &st = *s_;
  const ModelSpec &m = st.spec;
  const StepOptions &o = st.opt;
  const int64_t B = o.batch;
  const int64_t R = step_rows(o); // rows through the layers; a request each in the page table
  const int64_t attn_width = m.hq * m.head_dim;
  auto on = [&](StepOp op) {
    return (only == nullptr || *only == op) && ((launch.omit >> static_cast<int>(op)) & 1u) == 0;
  };
  ops::ChainLaunch chain;
  chain.dependent = pdl;
  chain.weights_once = pdl && launch.weights_once;
  auto linear_rows = [&](const Linear &l, const void *x, void *y, int64_t rows) {
    if (o.bits != 16)
      ops::quantized_linear(x, l.q, l.scales, l.biases, y, rows, l.n, l.k, o.bits, o.group, stream,
                            d, chain);
    else if (rows <= kMaxGemvRows)
      ops::gemv_bf16(x, l.w, y, rows, l.n, l.k, stream, d, chain);
    else
      st.gemms.at({l.n, l.k})->run(x, l.w, y, static_cast<cudaStream_t>(stream));
  };
  auto linear = [&](const Linear &l, const void *x, void *y) { linear_rows(l, x, y, R); };
  // The rmsnorm of `rows` rows of x (plus residual, into residual_out) into out.
  auto norm_tensors = [&](const void *x, const void *residual, void *residual_out, const void *w,
                          void *out, int64_t rows) {
    ops::RmsnormTensors t;
    t.x = x;
    t.residual = residual;
    t.residual_out = residual_out;
    t.w = w;
    t.out = out;
    t.rows = rows;
    t.hidden = m.hidden;
    t.eps = float(m.rms_eps);
    t.dependent = pdl;
    return t;
  };
  auto norm = [&](const void *x, const void *residual, void *residual_out, const void *w, void *out,
                  int64_t rows) {
    ops::rmsnorm(norm_tensors(x, residual, residual_out, w, out, rows), stream, d);
  };
  // The linear `l` and the rmsnorm of its output in one launch where it can
  // (StepLaunch::fuse_norm): true if it ran both.
  const bool fuse_norm = only == nullptr && launch.fuse_norm && o.bits != 16 && R <= 8;
  auto linear_norm = [&](const Linear &l, const void *x, void *y, const void *residual,
                         void *residual_out, const void *w, void *out, unsigned *counter) {
    return fuse_norm &&
           ops::quantized_linear_rmsnorm(
               x, l.q, l.scales, l.biases, y, R, l.n, l.k, o.bits, o.group,
               norm_tensors(y, residual, residual_out, w, out, R), counter, stream, d, chain);
  };
  bool norm1_done = false; // the down linear before normalised this layer's input
  bool final_done = false; // the last down linear normalised the final hidden state
  // One plan per step: every layer has the same lengths, heads and page size.
  ops::DecodePagedPlan plan;
  if (on(StepOp::attention))
    plan = ops::decode_paged_plan(st.indptr_host.data(), st.last_host.data(), R, m.hq, m.hkv,
                                  m.head_dim, o.page_size, d);
  char *qkv = static_cast<char *>(st.qkv);
  for (size_t i = 0; i < st.layers.size(); ++i) {
    const Layer &l = st.layers[i];
    if (on(StepOp::rmsnorm) && !norm1_done) {
      if (i == 0)
        norm(st.input, nullptr, nullptr, l.norm1, st.xn, R);
      else
        norm(st.mlp_out, st.resid, st.resid, l.norm1, st.xn, R);
    }
    norm1_done = false;
    // The new token's K and V into the cache: the fused rope's, or kv_append's (k = the roped k).
    ops::KvAppendTensors append;
    append.v = qkv + size_t(attn_width + m.hkv * m.head_dim) * kBf16;
    append.v_stride = m.qkv_width();
    append.k_cache = l.k_cache;
    append.v_cache = l.v_cache;
    append.kv_indptr = st.indptr;
    append.kv_indices = st.indices;
    append.kv_last_page_len = st.last;
    append.batch = R;
    append.num_pages = st.num_pages;
    append.hkv = m.hkv;
    append.head_dim = m.head_dim;
    append.page_size = o.page_size;
    append.dependent = pdl;
    if (on(StepOp::qkv)) {
      linear(l.qkv, st.xn, st.qkv);
      if (l.qkv_bias && !fuse)
        add_bias_bf16(st.qkv, l.qkv_bias, R, m.qkv_width(), static_cast<cudaStream_t>(stream));
    }
    if (on(StepOp::rope)) {
      ops::RopeTensors t;
      t.q = qkv;
      t.k = qkv + size_t(attn_width) * kBf16;
      t.q_out = st.q;
      t.k_out = st.k;
      t.positions = st.positions;
      t.rows = R;
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
      if (fuse) { // rope writes k and v to the cache and adds the bias: the same bits
        t.append = &append;
        t.qkv_bias = l.qkv_bias;
      }
      ops::rope(t, stream, d);
    }
    if (on(StepOp::kv_append) && !fuse) {
      append.k = st.k;
      ops::kv_append(append, stream, d);
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
      t.batch = R;
      t.num_pages = st.num_pages;
      t.hq = m.hq;
      t.hkv = m.hkv;
      t.head_dim = m.head_dim;
      t.page_size = o.page_size;
      t.scale = 1.0f / std::sqrt(float(m.head_dim));
      t.kv_indptr_host = st.indptr_host.data();
      t.kv_last_page_len_host = st.last_host.data();
      t.dependent = pdl;
      // The step's page table is uploaded when the step is made: no kernel of the chain writes
      // it, so decode.paged may read it before its wait.
      t.prefetch_kib = pdl ? launch.kv_prefetch_kib : 0;
      ops::decode_paged(t, plan, stream);
    }
    bool norm2_done = false;
    if (on(StepOp::o_proj)) {
      norm2_done = linear_norm(l.o, st.attn, st.o_out, i == 0 ? st.input : st.resid, st.resid,
                               l.norm2, st.xn, st.norm_counters + 2 * i);
      if (!norm2_done)
        linear(l.o, st.attn, st.o_out);
    }
    if (on(StepOp::rmsnorm) && !norm2_done)
      norm(st.o_out, i == 0 ? st.input : st.resid, st.resid, l.norm2, st.xn, R);
    bool silu_done = false; // the gate/up linear's epilogue wrote st.act
    if (on(StepOp::gate_up)) {
      const Linear &gu = l.gate_up;
      if (only == nullptr && launch.fuse_silu_mul && R <= kMaxGemvRows)
        silu_done =
            o.bits == 16
                ? ops::gemv_bf16_silu_mul(st.xn, gu.w, st.act, R, m.inter, gu.k, stream, d, chain)
                : ops::quantized_linear_silu_mul(st.xn, gu.q, gu.scales, gu.biases, st.act, R,
                                                 m.inter, gu.k, o.bits, o.group, stream, d, chain);
      if (!silu_done)
        linear(l.gate_up, st.xn, st.gate_up);
    }
    if (on(StepOp::silu_mul) && !silu_done) {
      ops::SiluMulTensors t;
      t.gate_up = st.gate_up;
      t.out = st.act;
      t.rows = R;
      t.inter = m.inter;
      t.dependent = pdl;
      ops::silu_mul(t, stream, d);
    }
    if (on(StepOp::down)) {
      unsigned *counter = st.norm_counters + 2 * i + 1;
      if (i + 1 < st.layers.size())
        norm1_done = linear_norm(l.down, st.act, st.mlp_out, st.resid, st.resid,
                                 st.layers[i + 1].norm1, st.xn, counter);
      else if (o.prefill == 0) // a decode step: R == B rows
        final_done = linear_norm(l.down, st.act, st.mlp_out, st.resid, st.resid, st.final_norm,
                                 st.hidden_out, counter);
      if (!norm1_done && !final_done)
        linear(l.down, st.act, st.mlp_out);
    }
  }
  if (on(StepOp::rmsnorm) && !final_done) {
    if (o.prefill > 0) {
      // The last token of each request: a plain launch, which waits for the whole of the
      // previous kernel; the norm after it may still be a dependent launch.
      const auto s = static_cast<cudaStream_t>(stream);
      gather_rows_bf16(st.last_mlp, st.mlp_out, B, o.prefill, o.prefill - 1, m.hidden, s);
      gather_rows_bf16(st.last_resid, st.resid, B, o.prefill, o.prefill - 1, m.hidden, s);
      norm(st.last_mlp, st.last_resid, st.last_resid, st.final_norm, st.hidden_out, B);
    } else {
      norm(st.mlp_out, st.resid, st.resid, st.final_norm, st.hidden_out, B);
    }
  }
  if (on(StepOp::lm_head))
    linear_rows(st.lm_head, st.hidden_out, st.logits, B);
}

const void *DecodeStep::logits() const { return s_->logits; }
const void *DecodeStep::hidden() const { return s_->hidden_out; }
size_t DecodeStep::logits_elements() const { return size_t(s_->opt.batch * s_->spec.vocab); }
size_t DecodeStep::hidden_elements() const { return size_t(s_->opt.batch * s_->spec.hidden); }
const ModelSpec &DecodeStep::spec() const { return s_->spec; }
const StepOptions &DecodeStep::options() const { return s_->opt; }
size_t DecodeStep::device_bytes() const { return s_->allocated; }

size_t DecodeStep::weight_bytes() const { return step_weight_bytes(s_->spec, s_->opt); }

namespace {

HostLinear host_linear(const Linear &l, const StepOptions &o) {
  HostLinear h;
  h.n = l.n;
  h.k = l.k;
  h.bits = o.bits;
  const size_t elements = size_t(l.n) * size_t(l.k);
  if (o.bits == 16) {
    h.w = to_host<uint16_t>(l.w, elements);
    return h;
  }
  h.group = o.group;
  h.q = to_host<uint32_t>(l.q, elements * size_t(o.bits) / 32);
  const size_t params = size_t(l.n) * size_t(l.k / o.group);
  h.scales = to_host<uint16_t>(l.scales, params);
  h.biases = to_host<uint16_t>(l.biases, params);
  return h;
}

} // namespace

HostLayer DecodeStep::host_layer(int64_t layer) const {
  const State &st = *s_;
  const ModelSpec &m = st.spec;
  if (layer < 0 || layer >= m.layers)
    HONE_INVALID_ARGUMENT("decode step: layer " + std::to_string(layer) + " is outside 0.." +
                          std::to_string(m.layers - 1));
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  const Layer &l = st.layers[size_t(layer)];
  HostLayer h;
  h.qkv = host_linear(l.qkv, st.opt);
  h.o = host_linear(l.o, st.opt);
  h.gate_up = host_linear(l.gate_up, st.opt);
  h.down = host_linear(l.down, st.opt);
  if (l.qkv_bias)
    h.qkv_bias = to_host<uint16_t>(l.qkv_bias, size_t(m.qkv_width()));
  h.norm1 = to_host<uint16_t>(l.norm1, size_t(m.hidden));
  h.norm2 = to_host<uint16_t>(l.norm2, size_t(m.hidden));
  h.k_cache = st.gather_tokens(l.k_cache, 0, st.opt.context);
  h.v_cache = st.gather_tokens(l.v_cache, 0, st.opt.context);
  return h;
}

HostStepOutputs DecodeStep::host_outputs() const {
  const State &st = *s_;
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  HostStepOutputs out;
  out.hidden = to_host<uint16_t>(st.hidden_out, hidden_elements());
  out.logits = to_host<uint16_t>(st.logits, logits_elements());
  const int64_t T = new_tokens(st.opt);
  for (const Layer &l : st.layers) {
    out.appended_k.push_back(st.gather_tokens(l.k_cache, st.opt.context, T));
    out.appended_v.push_back(st.gather_tokens(l.v_cache, st.opt.context, T));
  }
  return out;
}

HostStepInputs DecodeStep::host_inputs() const {
  const State &st = *s_;
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  HostStepInputs in;
  in.input = to_host<uint16_t>(st.input, size_t(step_rows(st.opt) * st.spec.hidden));
  in.positions = st.positions_host;
  in.tokens = st.tokens;
  return in;
}

HostHead DecodeStep::host_head() const {
  const State &st = *s_;
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
  HostHead h;
  h.final_norm = to_host<uint16_t>(st.final_norm, size_t(st.spec.hidden));
  h.lm_head = host_linear(st.lm_head, st.opt);
  return h;
}

HostStep download(const DecodeStep &step) {
  HostStep h;
  h.spec = step.spec();
  h.batch = step.options().batch;
  h.context = step.options().context;
  h.new_tokens = new_tokens(step.options());
  h.inputs = step.host_inputs();
  for (int64_t i = 0; i < h.spec.layers; ++i)
    h.layers.push_back(step.host_layer(i));
  h.head = step.host_head();
  return h;
}

void export_decode_step(const DecodeStep &step, const std::filesystem::path &dir) {
  if (step.options().prefill > 0)
    HONE_INVALID_ARGUMENT("decode step: the export holds decode steps (one new token per "
                          "request); this is a prefill step of " +
                          std::to_string(step.options().prefill) + " tokens per request");
  StepExportSource src;
  src.spec = step.spec();
  src.batch = step.options().batch;
  src.context = step.options().context;
  src.weights = weight_format(step.options().bits, step.options().group);
  src.inputs = step.host_inputs();
  src.head = step.host_head();
  src.layer = [&step](int64_t i) { return step.host_layer(i); };
  write_step_export(dir, src);
}

size_t DecodeStep::kv_bytes() const { return step_kv_bytes(s_->spec, s_->opt); }

int64_t DecodeStep::rows() const { return step_rows(s_->opt); }

double DecodeStep::flops() const {
  const ModelSpec &m = s_->spec;
  const StepOptions &o = s_->opt;
  const double per_row =
      double(m.qkv_width()) * double(m.hidden) + double(m.hidden) * double(m.hq * m.head_dim) +
      2.0 * double(m.inter) * double(m.hidden) + double(m.hidden) * double(m.inter);
  // Attended tokens summed over the rows: row j of a request attends to context + j + 1.
  const double T = double(new_tokens(o));
  const double attended = double(o.batch) * (T * double(o.context) + T * (T + 1) / 2);
  return double(m.layers) *
             (2.0 * double(rows()) * per_row + 4.0 * attended * double(m.hq) * double(m.head_dim)) +
         2.0 * double(o.batch) * double(m.vocab) * double(m.hidden);
}

} // namespace hone::model

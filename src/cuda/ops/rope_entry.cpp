// Public entry point of rope (include/hone/ops/cuda.h).
#include <mutex>
#include <string>
#include <vector>

#include "cuda/kernels/rope/rope.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/kv_append_op.h"
#include "cuda/ops/rope_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"

namespace hone::ops::cuda {

namespace {

constexpr const char *kOp = "rope";

// The frequencies of the last (frequencies, head_dim) seen by this thread: a decode step asks
// for the same ones at every layer.
const std::vector<double> &inv_freq_of(const hone::cuda::RopeFrequencies &f, int head_dim) {
  thread_local hone::cuda::RopeFrequencies last_f;
  thread_local int last_head_dim = 0;
  thread_local std::vector<double> last;
  if (!(f == last_f) || head_dim != last_head_dim) {
    last = hone::cuda::rope_inv_freq(f, head_dim);
    last_f = f;
    last_head_dim = head_dim;
  }
  return last;
}

void require_stride(const char *name, int64_t stride, int64_t least) {
  if (stride != 0 && (stride < least || stride % 8 != 0))
    HONE_INVALID_ARGUMENT(std::string(kOp) + ": " + name + "=" + std::to_string(stride) +
                          " is not 0 or a multiple of 8 of at least " + std::to_string(least));
}

} // namespace

// The fused append (and bias) run the tactic resolved for the plain rope of the same shape: its
// configs (vec, threads) cover the v heads the same way, and the op's tuning times the plain
// rope only.
void rope(const RopeTensors &t, void *stream, Dispatcher &d) {
  const Resolution &r = d.resolve(hone::cuda::entry_op<hone::cuda::RopeOp>(),
                                  Shape{{t.rows, t.hq, t.hkv, t.head_dim}, DType::bf16});
  hone::cuda::RopeFrequencies f;
  f.theta = t.theta;
  f.llama3_factor = t.llama3_factor;
  f.llama3_low_freq_factor = t.llama3_low_freq_factor;
  f.llama3_high_freq_factor = t.llama3_high_freq_factor;
  f.llama3_original_max_positions = t.llama3_original_max_positions;
  const std::vector<double> &inv_freq = inv_freq_of(f, static_cast<int>(t.head_dim));
  hone::cuda::require_aligned(kOp, {{"q", t.q}, {"k", t.k}});
  hone::cuda::require_aligned(kOp, {{"positions", t.positions}}, 4);
  const KvAppendTensors *app = t.append;
  if (app != nullptr) {
    if (app->k != nullptr)
      HONE_INVALID_ARGUMENT(std::string(kOp) +
                            ": append->k must be nullptr (the roped k goes to the cache)");
    if (app->batch != t.rows || app->hkv != t.hkv || app->head_dim != t.head_dim)
      HONE_INVALID_ARGUMENT(
          std::string(kOp) + ": append has batch=" + std::to_string(app->batch) +
          ", hkv=" + std::to_string(app->hkv) + ", head_dim=" + std::to_string(app->head_dim) +
          " where rope has rows=" + std::to_string(t.rows) + ", hkv=" + std::to_string(t.hkv) +
          ", head_dim=" + std::to_string(t.head_dim));
    if (app->page_size != 16 && app->page_size != 32 && app->page_size != 64)
      HONE_INVALID_ARGUMENT(std::string(kOp) + ": append->page_size=" +
                            std::to_string(app->page_size) + " is not 16, 32 or 64");
    hone::cuda::kv_append_validate(*app, "rope (append)");
  } else if (t.qkv_bias != nullptr) {
    HONE_INVALID_ARGUMENT(std::string(kOp) +
                          ": qkv_bias needs the fused append (v's share of the bias goes with v)");
  }
  if (t.qkv_bias != nullptr)
    hone::cuda::require_aligned(kOp, {{"qkv_bias", t.qkv_bias}});
  if (app != nullptr && t.q_out != nullptr)
    hone::cuda::require_aligned(kOp, {{"q_out", t.q_out}}); // k_out is not written
  else if (app == nullptr && (t.q_out || t.k_out))
    hone::cuda::require_aligned(kOp, {{"q_out", t.q_out}, {"k_out", t.k_out}});
  require_stride("q_stride", t.q_stride, t.hq * t.head_dim);
  require_stride("k_stride", t.k_stride, t.hkv * t.head_dim);
  require_stride("q_out_stride", t.q_out_stride, t.hq * t.head_dim);
  require_stride("k_out_stride", t.k_out_stride, t.hkv * t.head_dim);
  hone::cuda::RopeArgs a;
  a.q = t.q;
  a.k = t.k;
  const bool in_place = t.q_out == nullptr;
  a.q_out = in_place ? const_cast<void *>(t.q) : t.q_out;
  a.k_out = in_place ? const_cast<void *>(t.k) : t.k_out;
  a.q_stride = t.q_stride;
  a.k_stride = t.k_stride;
  a.q_out_stride = in_place ? t.q_stride : t.q_out_stride;
  a.k_out_stride = in_place ? t.k_stride : t.k_out_stride;
  a.positions = t.positions;
  a.rows = static_cast<int>(t.rows);
  a.hq = static_cast<int>(t.hq);
  a.hkv = static_cast<int>(t.hkv);
  a.head_dim = static_cast<int>(t.head_dim);
  a.inv_freq = inv_freq.data();
  a.bias = t.qkv_bias;
  if (app != nullptr) {
    a.k_out = nullptr;
    a.v = app->v;
    a.v_stride = app->v_stride;
    a.k_cache = app->k_cache;
    a.v_cache = app->v_cache;
    a.kv_indptr = app->kv_indptr;
    a.kv_indices = app->kv_indices;
    a.kv_last_page_len = app->kv_last_page_len;
    a.num_pages = static_cast<int>(app->num_pages);
    a.page_size = static_cast<int>(app->page_size);
  }
  a.dependent = t.dependent;
  hone::cuda::check_launch(
      kOp, r, hone::cuda::rope_launch(r.compiled.as<hone::cuda::RopeConfig>(), a, stream));
}

void rope(const RopeTensors &t, void *stream) { rope(t, stream, dispatcher()); }

} // namespace hone::ops::cuda

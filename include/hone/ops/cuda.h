// CUDA ops: public entry points on caller-owned device memory. Each call resolves its tactic
// through the CUDA dispatcher (environment override, cache, lazy tune, default) and enqueues
// one launch on the caller's stream; it never synchronises. No CUDA header is needed here:
// a stream is passed as the cudaStream_t value cast to void * (nullptr: the legacy stream).
//
//   hone::ops::cuda::gemv_bf16(x, w, y, rows, n, k, stream);   // x, w, y device pointers
#pragma once

#include <cstddef>
#include <cstdint>

namespace hone {
class Dispatcher;
}

namespace hone::ops::cuda {

// How one call is launched as a link of a chain of kernels on one stream (a model step): a
// tactic of the chain (`hone step` measures it), not of the op, that changes no bit of the
// output.
struct ChainLaunch {
  // A programmatic dependent launch: the kernel may start while the kernel before it on the
  // stream still runs (its launch, ramp and set-up overlap that kernel's tail); it waits for
  // that kernel to complete (griddepcontrol.wait) before it reads an activation or writes
  // anything, and lets the next kernel start early. The register-pipeline kernels of gemv.bf16
  // and qmv.affine issue their first weights (and group parameters) before the wait, so the
  // kernel before must not write those. Ignored where the device has no programmatic dependent
  // launch (before sm_90) and by vendor (cuBLASLt) and qmm tactics.
  bool dependent = false;
  // With `dependent`: before its griddepcontrol.wait, a kernel asks L2 for up to this many KiB
  // per CTA of what it reads that the kernels before it do not write, in the order it reads it
  // (cp.async.bulk.prefetch.L2, a hint: no bit of the output changes). 0: none. Taken by
  // decode.paged (the cached K and V of its first tiles; it then reads its page table before
  // the wait, so the kernel before must not write that); the other kernels ignore it.
  int prefetch_kib = 0;
  // With `dependent`: a gemv.bf16 or qmv.affine tactic of the mma path runs as the weights-once
  // ring kernel of the same K order (the same bits) where one takes the shape, whose producer
  // sends its first weights before the kernel's griddepcontrol.wait, where the mma kernels wait
  // at their entry. The other ops and paths ignore it.
  bool weights_once = false;
};

// The process-wide dispatcher over the CUDA backend, configured from the environment.
// Throws Error(runtime) when no CUDA device is present.
Dispatcher &dispatcher();

// Y[r, n] = sum_k X[r, k] * W[n, k] in bf16 with fp32 accumulation. X is [rows, k], W is
// [n, k], Y is [rows, n], row-major bf16 bit patterns in device memory of device 0.
// REQUIRES: 1 <= rows <= 32; k % 8 == 0; x and w 16-byte aligned.
// Throws Error(invalid_argument) naming a bad rows, n or k, Error(runtime) when the launch
// fails. A split-K tactic uses a workspace kept per stream (grown on demand, never shrunk).
void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream, Dispatcher &d, const ChainLaunch &chain = {});
void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream);

// An MLP's gate/up linear and SiLU x up in one launch: Y[r, i] = silu(G[r, i]) x U[r, i], where
// [G | U] = X W^T is gemv_bf16 of W = [W_gate; W_up] (bf16 [2 inter, k]) and Y is bf16
// [rows, inter]. The tactic is gemv_bf16's for (rows, 2 inter, k), and Y has the bits of that
// call followed by the silu_mul op on its output. Returns false, having launched nothing, where
// that tactic has no such epilogue (only the mma path has one; inter must be a multiple of 8):
// the caller then runs the two ops. Same REQUIRES and errors as gemv_bf16.
bool gemv_bf16_silu_mul(const void *x, const void *w, void *y, int64_t rows, int64_t inter,
                        int64_t k, void *stream, Dispatcher &d, const ChainLaunch &chain = {});

// Affine-quantized GEMV: Y[r, n] = sum_k X[r, k] * (q[n, k] * scale[n, k / group] +
// bias[n, k / group]). q is uint32 [n, k * bits / 32] (values along K, lowest bits first, the
// layout hone::ops::cpu::quantize_affine makes), scales and biases bf16 [n, k / group], X
// [rows, k] and Y [rows, n] bf16, all row-major in device memory of device 0.
// REQUIRES: 1 <= rows <= 32; bits in {4, 8}; group in {32, 64, 128}; k % group == 0;
// x 16-byte aligned, q 16-byte aligned.
// Throws Error(invalid_argument) naming a bad rows, n, k, bits or group, Error(runtime) when
// the launch fails.
void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream,
                Dispatcher &d, const ChainLaunch &chain = {});
void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream);

// gemv_bf16_silu_mul's counterpart on affine-quantized weights: [G | U] = qmv_affine of the
// [gate; up] weights (n = 2 inter rows, in the qmv_affine layout), Y[r, i] = silu(G[r, i]) x
// U[r, i] bf16 [rows, inter], with the bits of qmv_affine followed by silu_mul. The tactic is
// qmv_affine's for (rows, 2 inter, k, bits, group); false, having launched nothing, where it has
// no such epilogue (4 bits, the mma path's register pipeline at rows_per_cta 8; inter a
// multiple of 8). Same REQUIRES and errors as qmv_affine.
bool qmv_affine_silu_mul(const void *x, const uint32_t *q, const void *scales, const void *biases,
                         void *y, int64_t rows, int64_t inter, int64_t k, int bits, int group,
                         void *stream, Dispatcher &d, const ChainLaunch &chain = {});

// Affine-quantized GEMM for prefill, on the qmv_affine weights as they are (one layout for
// every row count): Y[r, n] = sum_k X[r, k] * (q[n, k] * scale[n, k / group] + bias[n, k /
// group]), fp32 accumulation, Hopper tensor cores (sm_90a). Same operands as qmv_affine.
// REQUIRES: 1 <= rows <= 16384; n % 8 == 0; bits in {4, 8}; group in {32, 64, 128};
// k % group == 0; x, q and y 16-byte aligned, scales and biases 2-byte aligned.
// Scratch (the group parameters transposed, split-K partials) comes from hone's workspace of
// `stream`, grown on demand: run a shape once before capturing it in a CUDA graph.
// Throws Error(invalid_argument) naming a bad argument or a build without qmm kernels,
// Error(runtime) when the launch fails.
void qmm_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream,
                Dispatcher &d);
void qmm_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream);

// One quantized linear layer for any row count (1..16384) on the same one copy of the weights:
// qmv_affine up to the crossover row count, qmm_affine above, each with its own tactic. The
// crossover is per (n, k, bits, group, rows bucket): HONE_QMV_MAX_ROWS, else the tuning cache
// (`hone tune --model`), else the default (qmv up to 16 rows). Requirements and errors are
// qmm_affine's (qmv runs at most 32 rows).
void quantized_linear(const void *x, const uint32_t *q, const void *scales, const void *biases,
                      void *y, int64_t rows, int64_t n, int64_t k, int bits, int group,
                      void *stream, Dispatcher &d, const ChainLaunch &chain = {});
void quantized_linear(const void *x, const uint32_t *q, const void *scales, const void *biases,
                      void *y, int64_t rows, int64_t n, int64_t k, int bits, int group,
                      void *stream);
// The gate/up linear with SiLU x up in its epilogue where quantized_linear runs qmv_affine for
// (rows, 2 inter, k, bits, group) and that tactic has the epilogue (qmv_affine_silu_mul); false,
// having launched nothing, otherwise (the qmm side included).
bool quantized_linear_silu_mul(const void *x, const uint32_t *q, const void *scales,
                               const void *biases, void *y, int64_t rows, int64_t inter, int64_t k,
                               int bits, int group, void *stream, Dispatcher &d,
                               const ChainLaunch &chain = {});

// --- decode.paged: paged-attention decode with split-KV -------------------------------------
// o[b, h] = sum_t softmax_t(scale q[b, h] . k[b, t, h / G]) v[b, t, h / G], G = hq / hkv, over
// the len[b] tokens of request b in a paged bf16 cache:
//   q, o     bf16 [batch, hq, head_dim]; k_cache, v_cache bf16 [num_pages, page_size, hkv,
//            head_dim]; kv_indptr int32 [batch + 1] (monotone), kv_indices int32 (page
//            numbers of request b at kv_indptr[b] .. kv_indptr[b + 1] - 1), kv_last_page_len
//            int32 [batch] (1 .. page_size): len[b] = (pages - 1) * page_size + last;
//   lse      optional float [batch, hq]: the NATURAL log of sum_t exp(scale q . k_t).
// head_dim 64/128/256, page_size 16/32/64, hq a multiple of hkv with hq / hkv <= 8.
struct DecodePagedTensors {
  const void *q = nullptr, *k_cache = nullptr, *v_cache = nullptr; // device, 16-byte aligned
  const int32_t *kv_indptr = nullptr, *kv_indices = nullptr, *kv_last_page_len = nullptr;
  void *o = nullptr;    // device, 16-byte aligned
  float *lse = nullptr; // device or nullptr (not written)
  int64_t batch = 0, num_pages = 0, hq = 0, hkv = 0, head_dim = 0, page_size = 0;
  float scale = 0; // e.g. 1 / sqrt(head_dim)
  // Host copies of kv_indptr and kv_last_page_len, read by the plan (equal to the device ones).
  const int32_t *kv_indptr_host = nullptr, *kv_last_page_len_host = nullptr;
  // A programmatic dependent launch (a link of a decode step): the split kernel may start while
  // the kernel before it runs and waits for it before it reads anything.
  bool dependent = false;
  // With `dependent`: KiB of cached K and V per CTA asked of L2 before the wait
  // (ChainLaunch::prefetch_kib); the page table is then read before the wait.
  int prefetch_kib = 0;
};

// The split of one decode step, computed on the host from the page table's host copy and
// allocation-free (the dispatcher allocates only at the first step of a new bucket). Lengths
// change every step, so a runtime plans once per step and reuses the plan for every layer of
// that step (same lengths, heads and page size).
struct DecodePagedPlan {
  int64_t batch = 0, hq = 0, hkv = 0, head_dim = 0, page_size = 0;
  int64_t total_len = 0, max_len = 0; // [tokens]
  int kv_chunk = 0;                   // [tokens] per split; 0: no split
  int warps = 4;                      // warps per CTA
  int64_t chunks = 0;                 // work items (CTAs per KV head)
  int max_chunks = 0;                 // 1: no merge kernel
  int64_t pages_begin = 0, pages_end = 0; // kv_indptr[0], kv_indptr[batch]
  size_t workspace_bytes = 0;         // partial states, from hone's per-stream workspace
  // Where kv_chunk came from: "HONE_DECODE_KV_CHUNK", "env" (HONE_TACTIC_DECODE_PAGED),
  // "cache", "tuned" or "heuristic". A static string.
  const char *source = "";
};

// Judges a decode step's heads and host page table with no device, as decode_paged_plan()
// does first: throws Error(invalid_argument) naming the bad value (hq not a multiple of hkv, a
// GQA ratio over 8, head_dim, page_size, batch, kv_indptr not monotone, a request of length 0,
// a kv_last_page_len outside 1..page_size). For surfaces that check input before the device.
void decode_paged_validate(const int32_t *kv_indptr_host, const int32_t *kv_last_page_len_host,
                           int64_t batch, int64_t hq, int64_t hkv, int64_t head_dim,
                           int64_t page_size);

// kv_chunk in this order: HONE_DECODE_KV_CHUNK; else the dispatcher's answer for the bucket
// {batch pow2, max_len pow2, total_len pow2, hq, hkv, head_dim, page_size} when it comes from
// HONE_TACTIC_DECODE_PAGED, the tuning cache or a lazy tune (HONE_AUTOTUNE=1); else the
// default heuristic on the exact lengths, which balances the work over every SM.
// Throws Error(invalid_argument) naming the bad value: hq not a multiple of hkv, a GQA ratio
// over 8, head_dim, page_size, batch, kv_indptr not monotone, a request of length 0, a
// kv_last_page_len outside 1..page_size, a HONE_DECODE_KV_CHUNK that is not a multiple of
// page_size.
DecodePagedPlan decode_paged_plan(const int32_t *kv_indptr_host,
                                  const int32_t *kv_last_page_len_host, int64_t batch, int64_t hq,
                                  int64_t hkv, int64_t head_dim, int64_t page_size,
                                  Dispatcher &d);
DecodePagedPlan decode_paged_plan(const int32_t *kv_indptr_host,
                                  const int32_t *kv_last_page_len_host, int64_t batch, int64_t hq,
                                  int64_t hkv, int64_t head_dim, int64_t page_size);

// Enqueues the split kernel and, when a request has more than one chunk, the merge kernel on
// `stream`; never synchronises (except with HONE_CHECK_PAGES=1, which first checks every page
// index of the batch against num_pages on the device, waits, and throws
// Error(invalid_argument) naming the first bad position and value; not inside a graph
// capture). The partial states live in hone's workspace of `stream`, grown on demand: run a
// step once before capturing it in a CUDA graph. REQUIRES: `plan` was made for t's page table
// (batch, heads, head_dim, page_size are checked). Throws Error(invalid_argument) for a null
// or misaligned pointer, Error(runtime) when the launch fails.
void decode_paged(const DecodePagedTensors &t, const DecodePagedPlan &plan, void *stream);
// Plans (from t.kv_indptr_host and t.kv_last_page_len_host), then runs.
void decode_paged(const DecodePagedTensors &t, void *stream, Dispatcher &d);
void decode_paged(const DecodePagedTensors &t, void *stream);


// --- The small ops of a decode step: rmsnorm, rope, kv_append, silu_mul ----------------------
// All bf16 in device memory of device 0, enqueued on `stream` with the tactic the dispatcher
// resolves (environment override, cache, lazy tune, default); never synchronise. `dependent`
// launches the kernel with programmatic stream serialization (PDL, sm_90): it may start while
// the previous kernel on the stream runs, loads what that kernel does not write (weights, the
// page table, positions) and waits for it before reading its activations. Every pointer
// 16-byte aligned and every row stride a multiple of 8 elements. Errors: Error(invalid_argument)
// naming the bad value (a null or misaligned pointer, a shape outside the op's range),
// Error(runtime) when the launch fails.

// out = h / sqrt(mean(h^2) + eps) * w per row, h = x, or with a residual h = bf16(x +
// residual), which is also stored to residual_out (a decoder layer's fused residual add).
// x, residual, residual_out, out [rows, hidden]; w [hidden]. out may equal x and residual_out
// may equal residual (in place). REQUIRES: hidden % 8 == 0, hidden <= 32768.
struct RmsnormTensors {
  const void *x = nullptr;
  const void *residual = nullptr; // nullptr: no residual add
  void *residual_out = nullptr;   // required with residual
  const void *w = nullptr;
  void *out = nullptr;
  int64_t rows = 0, hidden = 0;
  float eps = 1e-6f;
  bool dependent = false;
};
void rmsnorm(const RmsnormTensors &t, void *stream, Dispatcher &d);
void rmsnorm(const RmsnormTensors &t, void *stream);

// A quantized linear and the rmsnorm of its output in one launch (a decode step's o_proj or
// down and the norm after it): y as quantized_linear writes it, then norm.out (and, with a
// residual, norm.residual_out) with the bits of rmsnorm(norm) on y, in the order of the rmsnorm
// tactic the dispatcher picks for (rows, n, residual). The linear's last CTA does the norm: one
// launch, and one wait of the next kernel, fewer. norm.x is y (or null); norm.rows and
// norm.hidden are rows and n; norm.dependent is ignored (the chain says). `counter`: a device
// unsigned holding 0, which the launch leaves at 0; one per launch in flight at a time. Where
// quantized_linear runs qmv_affine at this shape and its tactic has the fused form
// (hone::cuda::qmv_affine_norm_fits: 4 bits, up to 8 rows, the per-weight one-tile ahead=2
// kernel that the tactic would launch unstaged), one launch and true; false, having launched
// nothing, otherwise. A bad norm (norm.x another tensor, other rows or hidden, a negative eps)
// throws Error(invalid_argument) naming the value.
bool quantized_linear_rmsnorm(const void *x, const uint32_t *q, const void *scales,
                              const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                              int bits, int group, const RmsnormTensors &norm, unsigned *counter,
                              void *stream, Dispatcher &d, const ChainLaunch &chain = {});
bool quantized_linear_rmsnorm(const void *x, const uint32_t *q, const void *scales,
                              const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                              int bits, int group, const RmsnormTensors &norm, unsigned *counter,
                              void *stream);

// Rotary position embedding, half rotation (Llama, Qwen2), of every query and key head of
// `rows` tokens: with a = positions[r] x inv_freq[i], inv_freq[i] = theta^(-2i / head_dim)
// (remapped by Llama-3.1 scaling when llama3_factor != 0, as transformers does),
//   out[i] = x[i] cos a - x[D/2 + i] sin a,  out[D/2 + i] = x[D/2 + i] cos a + x[i] sin a.
// q [rows, hq, head_dim] and k [rows, hkv, head_dim] with row strides (0: contiguous, else
// e.g. (hq + 2 hkv) x head_dim for slices of a fused q/k/v output); q_out / k_out nullptr: in
// place, else out of place with their own strides. positions: device int32 [rows].
// Two fusions of a decode step, each giving the bits of the separate launches it replaces:
// `append` takes over the kv_append that follows rope (one launch for both), and `qkv_bias`
// the bias add before it (Qwen2's q/k/v projection bias).
// REQUIRES: head_dim % 8 == 0, head_dim <= 256.
struct KvAppendTensors;
struct RopeTensors {
  const void *q = nullptr, *k = nullptr;
  void *q_out = nullptr, *k_out = nullptr;
  const int32_t *positions = nullptr;
  int64_t rows = 0, hq = 0, hkv = 0, head_dim = 0;
  int64_t q_stride = 0, k_stride = 0, q_out_stride = 0, k_out_stride = 0; // [elements]
  double theta = 10000.0;
  // "rope_scaling" {"rope_type": "llama3", ...} of config.json; llama3_factor 0: none.
  double llama3_factor = 0, llama3_low_freq_factor = 1, llama3_high_freq_factor = 4,
         llama3_original_max_positions = 8192;
  // Optional: the kv_append of the roped k and of `append->v` in this launch, one request per
  // row (append->batch == rows, same hkv and head_dim): its caches, page table (host copies
  // checked where given), v and v_stride; append->k must be nullptr (the roped k is what goes to
  // the cache), and k_out is not written. The page table is read before the dependent launch's
  // wait: it must not be written by the kernel before. append->dependent is not read.
  const KvAppendTensors *append = nullptr;
  // Optional, with `append` only: bf16 [(hq + 2 hkv) x head_dim], q's heads then k's then v's;
  // every q, k and v element becomes bf16(x + bias) first, the bits of a separate bias add.
  const void *qkv_bias = nullptr;
  bool dependent = false;
};
void rope(const RopeTensors &t, void *stream, Dispatcher &d);
void rope(const RopeTensors &t, void *stream);

// Writes the new token's K and V of every request into the paged cache decode_paged reads
// (layout as DecodePagedTensors): request b's token goes to slot kv_last_page_len[b] - 1 of
// page kv_indices[kv_indptr[b + 1] - 1] (the table already counts the new token).
// k, v [batch, hkv, head_dim] with request strides (0: contiguous). The page table is read
// before the dependent launch's wait: it must not be written by the kernel before.
// With host copies of kv_indptr and kv_last_page_len, they are checked first (monotone, at least
// one page per request, kv_last_page_len in 1..page_size); a page outside [0, num_pages) is
// never written. REQUIRES: head_dim % 8 == 0.
struct KvAppendTensors {
  const void *k = nullptr, *v = nullptr;
  void *k_cache = nullptr, *v_cache = nullptr;
  const int32_t *kv_indptr = nullptr, *kv_indices = nullptr, *kv_last_page_len = nullptr;
  int64_t batch = 0, num_pages = 0, hkv = 0, head_dim = 0, page_size = 0;
  int64_t k_stride = 0, v_stride = 0; // [elements]
  const int32_t *kv_indptr_host = nullptr, *kv_last_page_len_host = nullptr; // optional
  bool dependent = false;
};
void kv_append(const KvAppendTensors &t, void *stream, Dispatcher &d);
void kv_append(const KvAppendTensors &t, void *stream);

// out[r, i] = silu(gate[r, i]) x up[r, i], silu(g) = g / (1 + exp(-g)), in fp32, one rounding.
// Either gate_up, the fused gate/up projection output [rows, 2 x inter] (gate the first half
// of each row), or gate and up [rows, inter]; out [rows, inter].
// REQUIRES: inter % 8 == 0.
struct SiluMulTensors {
  const void *gate_up = nullptr;                // or:
  const void *gate = nullptr, *up = nullptr;
  void *out = nullptr;
  int64_t rows = 0, inter = 0;
  bool dependent = false;
};
void silu_mul(const SiluMulTensors &t, void *stream, Dispatcher &d);
void silu_mul(const SiluMulTensors &t, void *stream);

} // namespace hone::ops::cuda

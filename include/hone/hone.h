/* hone C API: a plain C ABI over the hone library, exported by libhone.so (CMake target
 * hone_c). It is what other languages bind to (the Python package uses it through ctypes,
 * examples/rust through an extern "C" block).
 *
 *   if (hone_check_version(HONE_C_API_VERSION_MAJOR) != HONE_OK) abort();
 *   if (hone_gemv_f32(x, w, y, rows, n, k) != HONE_OK)
 *     fprintf(stderr, "hone: %s\n", hone_last_error());
 *
 * Conventions, for every function below:
 *  - Every entry point returns a hone_status (except the version and error getters), never
 *    throws and never aborts: a C++ exception inside is caught and mapped to a status.
 *  - On failure, hone_last_error() returns a message for the calling thread that names the
 *    bad value ("gemv.f32: rows=0 is below 1"); a successful call clears it to "".
 *  - Ops go through the same dispatcher as the C++ entry points: the tactic comes from
 *    HONE_TACTIC_<OP>, else the tuning cache, else a lazy tune (HONE_AUTOTUNE=1), else the op's
 *    default. The environment is read once, at the first call of each backend.
 *  - The caller owns every buffer: hone never keeps a pointer past the call (a CUDA op's
 *    launch reads its buffers later, on the caller's stream), never frees one.
 *  - Strings are returned into a caller buffer `out` of `capacity` bytes, always
 *    NUL-terminated when capacity > 0. `length` (may be NULL) receives the string's length
 *    without the NUL. A buffer too small gives HONE_ERROR_BUFFER_TOO_SMALL with `length` set,
 *    so a call with (NULL, 0, &length) asks for the size.
 *  - Dimensions are int64_t; a negative or zero dimension is a bad shape.
 *
 * Versioning: HONE_C_API_VERSION_MAJOR changes when a function's signature or meaning changes
 * (old binaries must not load the new library); MINOR when functions or enum values are only
 * added. A binding calls hone_check_version(HONE_C_API_VERSION_MAJOR) once at load time.
 */
#ifndef HONE_HONE_H
#define HONE_HONE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HONE_C_API_VERSION_MAJOR 1
#define HONE_C_API_VERSION_MINOR 5

#if defined(__GNUC__)
#define HONE_API __attribute__((visibility("default")))
#else
#define HONE_API
#endif

typedef enum hone_status {
  HONE_OK = 0,
  /* Bad input: a NULL pointer, a bad shape or dtype, an unknown op or backend. */
  HONE_ERROR_INVALID_ARGUMENT = 1,
  /* A broken environment: a failing system or CUDA call, an unwritable cache directory. */
  HONE_ERROR_RUNTIME = 2,
  /* A CUDA op without a CUDA device, or in a build without the CUDA backend. */
  HONE_ERROR_NO_DEVICE = 3,
  /* A string did not fit the caller's buffer; `length` holds the size it needs. */
  HONE_ERROR_BUFFER_TOO_SMALL = 4,
  /* hone_check_version: the library's major version differs from the caller's. */
  HONE_ERROR_VERSION_MISMATCH = 5,
  /* Anything else (a bug): an unexpected exception or out of memory. */
  HONE_ERROR_INTERNAL = 6
} hone_status;

/* ---- version and errors ---------------------------------------------------------------- */

/* (HONE_C_API_VERSION_MAJOR << 16) | HONE_C_API_VERSION_MINOR of the loaded library. Never
 * fails. */
HONE_API uint32_t hone_api_version(void);

/* The hone library version, e.g. "0.1.0"; a static string owned by the library. */
HONE_API const char *hone_version(void);

/* HONE_OK when the library's API major version equals `major` (pass the
 * HONE_C_API_VERSION_MAJOR your code was compiled against); else
 * HONE_ERROR_VERSION_MISMATCH with a message naming both versions. */
HONE_API hone_status hone_check_version(int32_t major);

/* The message of the calling thread's last failed call, "" when the last call succeeded.
 * Owned by the library; valid until the thread's next hone call. Never NULL. */
HONE_API const char *hone_last_error(void);

/* A constant name for a status: "HONE_ERROR_INVALID_ARGUMENT". Never NULL. */
HONE_API const char *hone_status_name(hone_status status);

/* ---- devices ------------------------------------------------------------------------------ */

/* Device facts of one backend. The caller sets `struct_size` to sizeof(hone_device_info)
 * before the call; later minor versions only append fields, and fill no more than
 * struct_size bytes. Strings are NUL-terminated and truncated to their arrays. */
typedef struct hone_device_info {
  uint32_t struct_size;
  char backend[16];             /* "cpu" or "cuda" */
  char model[128];              /* e.g. "NVIDIA H200"; part of cache keys */
  uint64_t llc_bytes;           /* [bytes] last-level cache (L3 on CPU, L2 on GPU) */
  int32_t llc_known;            /* 0 when llc_bytes is a fallback guess */
  int32_t compute_units;        /* hardware threads (cpu) or SMs (cuda) */
  char compute_capability[16];  /* "9.0" on cuda; "" on cpu */
  char runtime_version[64];     /* e.g. "cudart 13000"; "" on cpu */
  char driver_version[64];      /* driver version (kernel release on cpu) */
  uint64_t memory_budget_bytes; /* [bytes] what rotating buffers may use */
} hone_device_info;

/* Fills `info` for `backend` ("cpu", "cuda"; NULL or "" for the best backend present).
 * Errors: INVALID_ARGUMENT for a NULL info, a struct_size below the 1.0 layout, or an unknown
 * backend; NO_DEVICE for "cuda" without a device or without the CUDA backend. */
HONE_API hone_status hone_device_info_get(const char *backend, hone_device_info *info);

/* The backends usable here, best first, comma-separated: "cuda,cpu" or "cpu". */
HONE_API hone_status hone_backends(char *out, size_t capacity, size_t *length);

/* The ops this build carries, comma-separated as name:backend, e.g.
 * "gemv.f32:cpu,qmv.affine:cpu,gemv.bf16:cuda,qmv.affine:cuda" (a cuda op is listed even
 * without a device; an op both backends carry is listed once per backend). */
HONE_API hone_status hone_ops(char *out, size_t capacity, size_t *length);

/* The dimension names of op `op` in the order hone_tune takes them, comma-separated:
 * "rows,n,k" for gemv.f32. Errors: INVALID_ARGUMENT for a NULL or unknown op. */
HONE_API hone_status hone_op_dimensions(const char *op, char *out, size_t capacity, size_t *length);

/* ---- CPU ops (host pointers) -------------------------------------------------------------- */

/* Y[r, n] = sum_k X[r, k] * W[n, k]; X [rows, k], W [n, k], Y [rows, n], row-major f32.
 * REQUIRES: rows, n, k >= 1. Errors: INVALID_ARGUMENT for a NULL pointer or a bad shape. */
HONE_API hone_status hone_gemv_f32(const float *x, const float *w, float *y, int64_t rows,
                                   int64_t n, int64_t k);

/* Affine-quantized GEMV: W[n, k] = q[n, k] * scale[n, k / group] + bias[n, k / group].
 * packed: uint32 [n, k * bits / 32], values along K, lowest bits first; scales, biases: bf16
 * bit patterns [n, k / group]; X [rows, k] and Y [rows, n] f32.
 * REQUIRES: bits in {4, 8}; group in {32, 64, 128}; k % group == 0; rows, n >= 1.
 * Errors: INVALID_ARGUMENT naming the bad pointer, bits, group, k or rows. */
HONE_API hone_status hone_qmv_affine(const float *x, const uint32_t *packed, const uint16_t *scales,
                                     const uint16_t *biases, float *y, int64_t rows, int64_t n,
                                     int64_t k, int32_t bits, int32_t group);

/* Element counts of the quantized layout of an [n, k] matrix: packed words (n * k * bits / 32)
 * and scales (= biases) (n * k / group). Either output may be NULL.
 * Errors: INVALID_ARGUMENT as hone_qmv_affine. */
HONE_API hone_status hone_affine_sizes(int64_t n, int64_t k, int32_t bits, int32_t group,
                                       int64_t *packed_words, int64_t *scale_count);

/* Quantizes W [n, k] f32 into caller buffers of the sizes hone_affine_sizes gives: per group,
 * scale = (max - min) / (2^bits - 1), bias = min, both rounded to bf16, then
 * q = round((w - bias) / scale) clamped to [0, 2^bits - 1].
 * Errors: INVALID_ARGUMENT for a NULL pointer or a bad n, k, bits or group. */
HONE_API hone_status hone_quantize_affine(const float *w, int64_t n, int64_t k, int32_t bits,
                                          int32_t group, uint32_t *packed, uint16_t *scales,
                                          uint16_t *biases);

/* W [n, k] f32 = q * scale + bias, the inverse of hone_quantize_affine's layout.
 * Errors: as hone_quantize_affine. */
HONE_API hone_status hone_dequantize_affine(const uint32_t *packed, const uint16_t *scales,
                                            const uint16_t *biases, int64_t n, int64_t k,
                                            int32_t bits, int32_t group, float *w);

/* ---- CUDA ops (device pointers, caller's stream) ------------------------------------------- */

/* Y[r, n] = sum_k X[r, k] * W[n, k] in bf16 with fp32 accumulation; x [rows, k], w [n, k],
 * y [rows, n] are row-major bf16 in device memory of device 0. `stream` is a cudaStream_t
 * (NULL: the legacy default stream). Enqueues one launch and returns; never synchronises.
 * REQUIRES: 1 <= rows <= 32; 8 <= k, k % 8 == 0; x and w 16-byte aligned.
 * Errors: INVALID_ARGUMENT for a NULL pointer or a bad shape (checked first, also without a
 * device); NO_DEVICE without a CUDA device or backend; RUNTIME when the launch fails. */
HONE_API hone_status hone_gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n,
                                    int64_t k, void *stream);

/* Affine-quantized GEMV in bf16 with fp32 accumulation:
 * Y[r, n] = sum_k X[r, k] * (q[n, k] * scale[n, k / group] + bias[n, k / group]).
 * q: uint32 [n, k * bits / 32], values along K, lowest bits first (hone_quantize_affine's
 * layout, copied to the device as is); scales, biases: bf16 [n, k / group]; x [rows, k] and
 * y [rows, n] bf16; all row-major in device memory of device 0. `stream` as hone_gemv_bf16.
 * Enqueues one launch and returns; never synchronises.
 * REQUIRES: 1 <= rows <= 32; n >= 1; bits in {4, 8}; group in {32, 64, 128}; k % group == 0;
 * x and q 16-byte aligned.
 * Errors: INVALID_ARGUMENT for a NULL or misaligned pointer or a bad rows, n, k, bits or group
 * (checked first, also without a device); NO_DEVICE without a CUDA device or backend; RUNTIME
 * when the launch fails. Since C API 1.1. */
HONE_API hone_status hone_qmv_affine_bf16(const void *x, const uint32_t *q, const void *scales,
                                          const void *biases, void *y, int64_t rows, int64_t n,
                                          int64_t k, int32_t bits, int32_t group, void *stream);

/* Affine-quantized GEMM for prefill (op qmm.affine), on the operands of hone_qmv_affine_bf16
 * as they are (one weight layout for every row count): the same Y, fp32 accumulation, on
 * Hopper tensor cores (sm_90a). Scratch (the group parameters transposed, split-K partials)
 * comes from hone's per-stream workspace, grown on demand: run a shape once before capturing
 * it in a CUDA graph. Enqueues its kernels and returns; never synchronises.
 * REQUIRES: 1 <= rows <= 16384; n % 8 == 0; bits in {4, 8}; group in {32, 64, 128};
 * k % group == 0; x, q and y 16-byte aligned.
 * Errors: INVALID_ARGUMENT for a NULL or misaligned pointer or a bad rows, n, k, bits or group
 * (checked first, also without a device); NO_DEVICE without a CUDA device or backend;
 * INVALID_ARGUMENT for a library built without the qmm kernels; RUNTIME when a launch fails.
 * Since C API 1.3. */
HONE_API hone_status hone_qmm_affine_bf16(const void *x, const uint32_t *q, const void *scales,
                                          const void *biases, void *y, int64_t rows, int64_t n,
                                          int64_t k, int32_t bits, int32_t group, void *stream);

/* One quantized linear layer for any row count (op quantized_linear): hone_qmv_affine_bf16 up
 * to the crossover row count, hone_qmm_affine_bf16 above, each with its own tuned tactic, on
 * the same one copy of the weights. The crossover: HONE_QMV_MAX_ROWS, else the tuning cache
 * (`hone tune --model`), else the default (16 rows). Requirements and errors are
 * hone_qmm_affine_bf16's. Since C API 1.3. */
HONE_API hone_status hone_quantized_linear_bf16(const void *x, const uint32_t *q,
                                                const void *scales, const void *biases, void *y,
                                                int64_t rows, int64_t n, int64_t k, int32_t bits,
                                                int32_t group, void *stream);

/* Paged-attention decode, one step, split along the KV sequence (op decode.paged):
 * o[b, h] = sum_t softmax_t(scale q[b, h] . k[b, t, h / G]) v[b, t, h / G], G = hq / hkv.
 * q, o: bf16 [batch, hq, head_dim]; k_cache, v_cache: bf16 [num_pages, page_size, hkv,
 * head_dim]; kv_indptr: int32 [batch + 1], monotone; kv_indices: int32 page numbers, request
 * b's at kv_indptr[b] .. kv_indptr[b + 1] - 1; kv_last_page_len: int32 [batch] in
 * 1..page_size, so len[b] = (pages - 1) * page_size + kv_last_page_len[b]; all in device
 * memory of device 0. kv_indptr_host, kv_last_page_len_host: host copies of those two, from
 * which the split is planned (kv_chunk: HONE_DECODE_KV_CHUNK, else the tuning cache, else a
 * heuristic). lse: NULL, or device float [batch, hq] receiving the NATURAL log of
 * sum_t exp(scale q . k_t). `stream` as hone_gemv_bf16. Enqueues one or two kernels and
 * returns; never synchronises, except with HONE_CHECK_PAGES=1, which first checks every page
 * index against num_pages on the device.
 * REQUIRES: head_dim in {64, 128, 256}; page_size in {16, 32, 64}; hq a multiple of hkv with
 * hq / hkv <= 8; q, k_cache, v_cache and o 16-byte aligned.
 * Errors: INVALID_ARGUMENT for a NULL or misaligned pointer, a bad batch, hq, hkv, head_dim,
 * page_size or num_pages, kv_indptr not monotone, a request of length 0, a kv_last_page_len
 * out of range (checked first, also without a device), and with HONE_CHECK_PAGES=1 a page
 * index out of range (naming its position and value); NO_DEVICE without a CUDA device or
 * backend; RUNTIME when a launch fails. Since C API 1.2. */
HONE_API hone_status hone_decode_paged_bf16(const void *q, const void *k_cache,
                                            const void *v_cache, const int32_t *kv_indptr,
                                            const int32_t *kv_indices,
                                            const int32_t *kv_last_page_len,
                                            const int32_t *kv_indptr_host,
                                            const int32_t *kv_last_page_len_host, void *o,
                                            float *lse, int64_t batch, int64_t num_pages,
                                            int64_t hq, int64_t hkv, int64_t head_dim,
                                            int64_t page_size, float scale, void *stream);

/* The small ops of a decode step (bf16 in device memory of device 0; `stream` as
 * hone_gemv_bf16; one launch each, never synchronising). Every pointer 16-byte aligned
 * (positions and the page table 4-byte). Errors: INVALID_ARGUMENT for a NULL or misaligned
 * pointer or a bad shape, naming it (checked first, also without a device); NO_DEVICE without a
 * CUDA device or backend; RUNTIME when the launch fails. Since C API 1.4. */

/* out = h / sqrt(mean(h^2) + eps) * w per row (op rmsnorm), h = x, or with residual non-NULL
 * h = bf16(x + residual), also stored to residual_out. x, residual, residual_out, out:
 * [rows, hidden]; w: [hidden]. out may equal x, residual_out may equal residual.
 * REQUIRES: hidden % 8 == 0, hidden <= 32768. */
HONE_API hone_status hone_rmsnorm_bf16(const void *x, const void *residual, void *residual_out,
                                       const void *w, void *out, int64_t rows, int64_t hidden,
                                       float eps, void *stream);

/* Rotary position embedding in place, half rotation as Llama and Qwen2 (op rope): the q heads
 * [rows, hq, head_dim] and k heads [rows, hkv, head_dim], rows q_stride and k_stride elements
 * apart (0: contiguous), rotated by positions (int32 [rows]) with inv_freq[i] =
 * theta^(-2i / head_dim); llama3_scaling NULL, or {factor, low_freq_factor, high_freq_factor,
 * original_max_position_embeddings} of a "rope_type": "llama3" config.
 * REQUIRES: head_dim % 8 == 0, head_dim <= 256. */
HONE_API hone_status hone_rope_bf16(void *q, void *k, const int32_t *positions, int64_t rows,
                                    int64_t hq, int64_t hkv, int64_t head_dim, int64_t q_stride,
                                    int64_t k_stride, double theta, const double *llama3_scaling,
                                    void *stream);

/* The new token's K and V of every request into the paged cache hone_decode_paged_bf16 reads
 * (op kv_append): slot kv_last_page_len[b] - 1 of page kv_indices[kv_indptr[b + 1] - 1]. k, v:
 * [batch, hkv, head_dim], requests k_stride and v_stride elements apart (0: contiguous).
 * kv_indptr_host, kv_last_page_len_host: host copies, checked first. A page outside
 * [0, num_pages) is never written. REQUIRES: head_dim % 8 == 0. */
HONE_API hone_status hone_kv_append_bf16(const void *k, const void *v, void *k_cache,
                                         void *v_cache, const int32_t *kv_indptr,
                                         const int32_t *kv_indices,
                                         const int32_t *kv_last_page_len,
                                         const int32_t *kv_indptr_host,
                                         const int32_t *kv_last_page_len_host, int64_t batch,
                                         int64_t num_pages, int64_t hkv, int64_t head_dim,
                                         int64_t page_size, int64_t k_stride, int64_t v_stride,
                                         void *stream);

/* rope and kv_append in one launch (op rope, its fused form): q rotated in place as
 * hone_rope_bf16 rotates it; k rotated and written, with v, into the paged cache as
 * hone_kv_append_bf16 writes them (k itself is not written). With qkv_bias non-NULL (Qwen2's
 * q/k/v bias, bf16 [(hq + 2 hkv) * head_dim]: q's heads, then k's, then v's), every q, k and v
 * element first becomes bf16(x + bias), the bits of a separate bias add. The result is bit for
 * bit that of the bias add, hone_rope_bf16 and hone_kv_append_bf16 launched one after another,
 * in one launch fewer (two with a bias). q: [batch, hq, head_dim]; k, v: [batch, hkv,
 * head_dim]; requests q_stride, k_stride, v_stride elements apart (0: contiguous); positions:
 * int32 [batch]; caches and page table as hone_kv_append_bf16's, with its host copies checked
 * first; theta and llama3_scaling as hone_rope_bf16's. Runs the rope tactic tuned for
 * hone_rope_bf16 at the same shape. A page outside [0, num_pages) is never written.
 * REQUIRES: head_dim % 8 == 0, head_dim <= 256; page_size in {16, 32, 64}. Since C API 1.5. */
HONE_API hone_status hone_rope_kv_append_bf16(
    void *q, const void *k, const void *v, const void *qkv_bias, void *k_cache, void *v_cache,
    const int32_t *positions, const int32_t *kv_indptr, const int32_t *kv_indices,
    const int32_t *kv_last_page_len, const int32_t *kv_indptr_host,
    const int32_t *kv_last_page_len_host, int64_t batch, int64_t num_pages, int64_t hq, int64_t hkv,
    int64_t head_dim, int64_t page_size, int64_t q_stride, int64_t k_stride, int64_t v_stride,
    double theta, const double *llama3_scaling, void *stream);

/* out = silu(gate) * up (op silu_mul), [rows, inter]. With up NULL, gate is the fused gate/up
 * projection output [rows, 2 * inter] (gate the first half of each row).
 * REQUIRES: inter % 8 == 0. */
HONE_API hone_status hone_silu_mul_bf16(const void *gate, const void *up, void *out, int64_t rows,
                                        int64_t inter, void *stream);

/* ---- tuning ------------------------------------------------------------------------------- */

/* hone_tune flags. */
#define HONE_TUNE_FORCE 1u /* re-tune a bucket the cache already holds */

/* Tunes one shape of op `op` ("gemv.f32", "qmv.affine", "gemv.bf16") like
 * `hone tune --op OP --shape ...`: validates the shape, maps it to its bucket, returns the
 * cached pick when a usable entry exists (unless HONE_TUNE_FORCE), else measures and records
 * the pick in the cache (unless HONE_CACHE=off); a stale entry, or one whose tactic this build
 * cannot run, is re-tuned. `dims` holds `rank` values in the op's
 * dimension order (gemv: rows, n, k; qmv.affine: rows, n, k, bits, group). `dtype` is NULL
 * for the op's own ("f32" for cpu ops, "bf16" for cuda ops). An op that both backends carry
 * (qmv.affine) is the CUDA op (bf16, what hone_qmv_affine_bf16 dispatches) when a CUDA device
 * is present and the CPU op (f32, hone_qmv_affine) otherwise; an explicit dtype picks the
 * backend whose op takes it ("bf16": cuda, then NO_DEVICE without a device; "f32": cpu). The
 * pick's tactic string (e.g. "gemv.f32:rows_per_block=4,...") goes to `out`. Blocks for the
 * whole measurement.
 * Errors: INVALID_ARGUMENT for an unknown op or dtype, a NULL dims, a wrong rank or a shape
 * the op rejects; NO_DEVICE for a CUDA op without a device; RUNTIME for a failing
 * measurement or an unreadable cache file; RUNTIME also when the cache could not be written,
 * after the pick was written to `out`; BUFFER_TOO_SMALL (the tune still happened and was
 * recorded). */
HONE_API hone_status hone_tune(const char *op, const int64_t *dims, int32_t rank, const char *dtype,
                               uint32_t flags, char *out, size_t capacity, size_t *length);

/* ---- cache -------------------------------------------------------------------------------- */

/* The cache file's path: $HONE_CACHE_DIR, else $XDG_CACHE_HOME/hone, else ~/.cache/hone, plus
 * tuning-cache.json. */
HONE_API hone_status hone_cache_path(char *out, size_t capacity, size_t *length);

/* Judges every entry against the current metadata of its own backend, like
 * `hone cache verify`: stale (other metadata or op version), unrunnable (a tactic this build
 * cannot run), corrupt (a file that does not parse). Entries of another device or of a backend
 * absent here are skipped. `problems` (may be NULL) receives the number of findings; `out`
 * (may be NULL with capacity 0) receives one line per finding, "stale  KEY  REASON\n",
 * "unrunnable  KEY  REASON\n" or "corrupt  PATH  REASON\n". HONE_OK whatever the count;
 * RUNTIME when the file exists but cannot be read. */
HONE_API hone_status hone_cache_verify(int32_t *problems, char *out, size_t capacity,
                                       size_t *length);

/* Removes the cache file (a corrupt one is kept aside). Errors: RUNTIME when it cannot be
 * removed. Memoised dispatch answers of this process are not forgotten. */
HONE_API hone_status hone_cache_clear(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HONE_HONE_H */

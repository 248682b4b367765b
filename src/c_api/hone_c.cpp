// The C API (include/hone/hone.h): every entry point runs its body through `guarded`, which
// clears the thread's last error, catches every exception and maps it to a hone_status.
#include "hone/hone.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hone/backend.h"
#include "hone/build_info.h"
#include "hone/cache.h"
#include "hone/cache_audit.h"
#include "hone/dtype.h"
#include "hone/error.h"
#include "hone/ops/cpu.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/tuning_store.h"
#ifdef HONE_WITH_CUDA
#include "hone/ops/cuda.h"
#endif

namespace {

thread_local std::string last_error;

// A status other than the ErrorKind mapping (no device, buffer too small, version).
struct StatusError {
  hone_status status;
  std::string message;
};

[[noreturn]] void fail(hone_status status, std::string message) {
  throw StatusError{status, std::move(message)};
}

template <class Body> hone_status guarded(Body &&body) noexcept {
  try {
    last_error.clear();
    body();
    return HONE_OK;
  } catch (const StatusError &e) {
    last_error = e.message;
    return e.status;
  } catch (const hone::Error &e) {
    last_error = e.what();
    return e.kind() == hone::ErrorKind::invalid_argument ? HONE_ERROR_INVALID_ARGUMENT
                                                         : HONE_ERROR_RUNTIME;
  } catch (const std::bad_alloc &) {
    last_error = "out of memory";
    return HONE_ERROR_INTERNAL;
  } catch (const std::exception &e) {
    last_error = std::string("internal error: ") + e.what();
    return HONE_ERROR_INTERNAL;
  } catch (...) {
    last_error = "internal error: unknown exception";
    return HONE_ERROR_INTERNAL;
  }
}

void require(const void *pointer, const char *function, const char *name) {
  if (pointer == nullptr)
    fail(HONE_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + name + " is NULL");
}

void require_aligned(const void *pointer, size_t alignment, const char *function,
                     const char *name) {
  if (reinterpret_cast<uintptr_t>(pointer) % alignment != 0) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", pointer);
    fail(HONE_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + name + "=" + address +
                                          " is not " + std::to_string(alignment) + "-byte aligned");
  }
}

// A pointer argument and its name in the messages.
struct NamedPointer {
  const char *name;
  const void *pointer;
};

// require() / require_aligned() on each of `args` in order: the first bad one is named.
void require(const char *function, std::initializer_list<NamedPointer> args) {
  for (const NamedPointer &a : args)
    require(a.pointer, function, a.name);
}
void require_aligned(size_t alignment, const char *function,
                     std::initializer_list<NamedPointer> args) {
  for (const NamedPointer &a : args)
    require_aligned(a.pointer, alignment, function, a.name);
}

// Copies `text` to the caller's buffer (see "Strings" in hone.h).
void write_string(const std::string &text, char *out, size_t capacity, size_t *length,
                  const char *function) {
  if (length)
    *length = text.size();
  if (out == nullptr && capacity > 0)
    fail(HONE_ERROR_INVALID_ARGUMENT,
         std::string(function) + ": out is NULL with capacity " + std::to_string(capacity));
  if (capacity > 0) {
    const size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
  }
  if (capacity <= text.size())
    fail(HONE_ERROR_BUFFER_TOO_SMALL, std::string(function) + ": needs " +
                                          std::to_string(text.size() + 1) + " bytes, capacity " +
                                          std::to_string(capacity));
}

// Appends `item` to a `sep`-separated list.
void append_item(std::string &list, std::string_view item, std::string_view sep = ",") {
  if (!list.empty())
    list += sep;
  list += item;
}

void copy_field(char *dst, size_t size, const std::string &src) {
  const size_t n = std::min(src.size(), size - 1);
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

bool cuda_compiled() { return hone::backend_compiled("cuda"); }

bool cuda_present() {
  const std::vector<std::string> present = hone::available_backends();
  return std::find(present.begin(), present.end(), "cuda") != present.end();
}

// Throws NO_DEVICE when the CUDA backend cannot run here; `what` names the caller.
void require_cuda(const std::string &what) {
  if (!cuda_compiled())
    fail(HONE_ERROR_NO_DEVICE,
         what + ": the CUDA backend is not compiled into this build (nvcc was not found)");
  if (!cuda_present())
    fail(HONE_ERROR_NO_DEVICE, what + ": no CUDA device is present");
}

hone::Backend &backend_named(const char *name) {
  const std::string_view b = name ? name : "";
  if (b.empty())
    return hone::best_backend();
  if (b == "cuda")
    require_cuda("backend 'cuda'");
  return hone::get_backend(b);
}

// The op named `name`. Where both backends carry it (qmv.affine): the one whose own dtype is
// `dtype` when given, else the best backend present (cuda with a device, else cpu); where
// only one does, that one (its validate() names a dtype it does not take). hone.h, hone_tune.
const hone::TunableOp &find_op(const char *name, const char *function,
                               std::optional<hone::DType> dtype = std::nullopt) {
  require(name, function, "op");
  const std::vector<const char *> order = cuda_present() ? std::vector<const char *>{"cuda", "cpu"}
                                                         : std::vector<const char *>{"cpu", "cuda"};
  const hone::TunableOp *first = nullptr;
  for (const char *backend : order)
    if (const hone::TunableOp *op = hone::Registry::global().find(name, backend)) {
      if (!dtype || op->dtype() == *dtype)
        return *op;
      if (first == nullptr)
        first = op;
    }
  if (first != nullptr)
    return *first;
  std::string known;
  for (const char *backend : {"cpu", "cuda"})
    for (const hone::TunableOp *op : hone::Registry::global().ops(backend))
      append_item(known, op->name(), ", ");
  fail(HONE_ERROR_INVALID_ARGUMENT,
       std::string(function) + ": unknown op '" + name + "' (this build has: " + known + ")");
}

std::string dim_names(const hone::TunableOp &op) {
  std::string out;
  for (const hone::DimSpec &d : op.buckets().dims)
    append_item(out, d.name, ", ");
  return out;
}

void check_affine(int64_t n, int64_t k, int32_t bits, int32_t group, const char *function) {
  if (n < 1)
    fail(HONE_ERROR_INVALID_ARGUMENT,
         std::string(function) + ": n=" + std::to_string(n) + " is below 1");
  if (k < 1)
    fail(HONE_ERROR_INVALID_ARGUMENT,
         std::string(function) + ": k=" + std::to_string(k) + " is below 1");
  if (bits != 4 && bits != 8)
    fail(HONE_ERROR_INVALID_ARGUMENT,
         std::string(function) + ": bits=" + std::to_string(bits) + " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    fail(HONE_ERROR_INVALID_ARGUMENT,
         std::string(function) + ": group=" + std::to_string(group) + " is not 32, 64 or 128");
  if (k % group != 0)
    fail(HONE_ERROR_INVALID_ARGUMENT, std::string(function) + ": k=" + std::to_string(k) +
                                          " is not a multiple of group=" + std::to_string(group));
}

// qmm.affine and quantized_linear share their operands and rules (quantized_linear's are
// qmm.affine's); `op` names the one dispatched.
template <class Run>
hone_status affine_linear_bf16(const char *function, const char *op, const void *x,
                               const uint32_t *q, const void *scales, const void *biases, void *y,
                               int64_t rows, int64_t n, int64_t k, int32_t bits, int32_t group,
                               Run run) {
  return guarded([&] {
    require(function, {{"x", x}, {"q", q}, {"scales", scales}, {"biases", biases}, {"y", y}});
    // Everything is judged before the device, so bad input reads the same everywhere.
    check_affine(n, k, bits, group, function);
    if (rows < 1 || rows > 16384)
      fail(HONE_ERROR_INVALID_ARGUMENT,
           std::string(function) + ": rows=" + std::to_string(rows) + " outside 1..16384");
    if (n % 8 != 0)
      fail(HONE_ERROR_INVALID_ARGUMENT,
           std::string(function) + ": n=" + std::to_string(n) + " is not a multiple of 8");
    require_aligned(16, function, {{"x", x}, {"q", q}, {"y", y}});
    const hone::TunableOp *found = hone::Registry::global().find(op, "cuda");
    if (found)
      found->validate(hone::Shape{{rows, n, k, bits, group}, hone::DType::bf16});
    require_cuda(function);
    if (!found)
      fail(HONE_ERROR_INVALID_ARGUMENT,
           std::string(function) + ": this library was built without the qmm.affine kernels "
                                   "(no CUTLASS headers when it was configured)");
    run();
  });
}

} // namespace

extern "C" {

uint32_t hone_api_version(void) {
  return (uint32_t{HONE_C_API_VERSION_MAJOR} << 16) | uint32_t{HONE_C_API_VERSION_MINOR};
}

const char *hone_version(void) { return HONE_VERSION_STRING; }

hone_status hone_check_version(int32_t major) {
  return guarded([&] {
    if (major != HONE_C_API_VERSION_MAJOR)
      fail(HONE_ERROR_VERSION_MISMATCH, "hone_check_version: caller expects C API major version " +
                                            std::to_string(major) + ", library " +
                                            HONE_VERSION_STRING + " provides " +
                                            std::to_string(HONE_C_API_VERSION_MAJOR) + "." +
                                            std::to_string(HONE_C_API_VERSION_MINOR));
  });
}

const char *hone_last_error(void) { return last_error.c_str(); }

const char *hone_status_name(hone_status status) {
  switch (status) {
  case HONE_OK:
    return "HONE_OK";
  case HONE_ERROR_INVALID_ARGUMENT:
    return "HONE_ERROR_INVALID_ARGUMENT";
  case HONE_ERROR_RUNTIME:
    return "HONE_ERROR_RUNTIME";
  case HONE_ERROR_NO_DEVICE:
    return "HONE_ERROR_NO_DEVICE";
  case HONE_ERROR_BUFFER_TOO_SMALL:
    return "HONE_ERROR_BUFFER_TOO_SMALL";
  case HONE_ERROR_VERSION_MISMATCH:
    return "HONE_ERROR_VERSION_MISMATCH";
  case HONE_ERROR_INTERNAL:
    return "HONE_ERROR_INTERNAL";
  }
  return "HONE_ERROR_UNKNOWN";
}

hone_status hone_device_info_get(const char *backend, hone_device_info *info) {
  return guarded([&] {
    require(info, "hone_device_info_get", "info");
    if (info->struct_size < sizeof(hone_device_info))
      fail(HONE_ERROR_INVALID_ARGUMENT,
           "hone_device_info_get: info->struct_size=" + std::to_string(info->struct_size) +
               " is below " + std::to_string(sizeof(hone_device_info)) +
               " (set it to sizeof(hone_device_info))");
    const hone::DeviceInfo &d = backend_named(backend).info();
    copy_field(info->backend, sizeof info->backend, d.backend);
    copy_field(info->model, sizeof info->model, d.model);
    info->llc_bytes = d.llc_bytes;
    info->llc_known = d.llc_known ? 1 : 0;
    info->compute_units = d.compute_units;
    copy_field(info->compute_capability, sizeof info->compute_capability, d.compute_capability);
    copy_field(info->runtime_version, sizeof info->runtime_version, d.runtime_version);
    copy_field(info->driver_version, sizeof info->driver_version, d.driver_version);
    info->memory_budget_bytes = d.memory_budget_bytes;
  });
}

hone_status hone_backends(char *out, size_t capacity, size_t *length) {
  return guarded([&] {
    std::string text;
    for (const std::string &b : hone::available_backends())
      append_item(text, b);
    write_string(text, out, capacity, length, "hone_backends");
  });
}

hone_status hone_ops(char *out, size_t capacity, size_t *length) {
  return guarded([&] {
    std::string text;
    for (const char *backend : {"cpu", "cuda"})
      for (const hone::TunableOp *op : hone::Registry::global().ops(backend))
        append_item(text, std::string(op->name()) + ":" + backend);
    write_string(text, out, capacity, length, "hone_ops");
  });
}

hone_status hone_op_dimensions(const char *op, char *out, size_t capacity, size_t *length) {
  return guarded([&] {
    std::string text = dim_names(find_op(op, "hone_op_dimensions"));
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    write_string(text, out, capacity, length, "hone_op_dimensions");
  });
}

hone_status hone_gemv_f32(const float *x, const float *w, float *y, int64_t rows, int64_t n,
                          int64_t k) {
  return guarded([&] {
    require(x, "hone_gemv_f32", "x");
    require(w, "hone_gemv_f32", "w");
    require(y, "hone_gemv_f32", "y");
    hone::ops::cpu::gemv_f32(x, w, y, rows, n, k);
  });
}

hone_status hone_qmv_affine(const float *x, const uint32_t *packed, const uint16_t *scales,
                            const uint16_t *biases, float *y, int64_t rows, int64_t n, int64_t k,
                            int32_t bits, int32_t group) {
  return guarded([&] {
    require(x, "hone_qmv_affine", "x");
    require(packed, "hone_qmv_affine", "packed");
    require(scales, "hone_qmv_affine", "scales");
    require(biases, "hone_qmv_affine", "biases");
    require(y, "hone_qmv_affine", "y");
    hone::ops::cpu::qmv_affine(x, packed, scales, biases, y, rows, n, k, bits, group);
  });
}

hone_status hone_affine_sizes(int64_t n, int64_t k, int32_t bits, int32_t group,
                              int64_t *packed_words, int64_t *scale_count) {
  return guarded([&] {
    check_affine(n, k, bits, group, "hone_affine_sizes");
    if (packed_words)
      *packed_words = n * k * bits / 32;
    if (scale_count)
      *scale_count = n * (k / group);
  });
}

hone_status hone_quantize_affine(const float *w, int64_t n, int64_t k, int32_t bits, int32_t group,
                                 uint32_t *packed, uint16_t *scales, uint16_t *biases) {
  return guarded([&] {
    require(w, "hone_quantize_affine", "w");
    require(packed, "hone_quantize_affine", "packed");
    require(scales, "hone_quantize_affine", "scales");
    require(biases, "hone_quantize_affine", "biases");
    check_affine(n, k, bits, group, "hone_quantize_affine");
    const hone::ops::cpu::AffineQuantized q = hone::ops::cpu::quantize_affine(w, n, k, bits, group);
    std::copy(q.packed.begin(), q.packed.end(), packed);
    std::copy(q.scales.begin(), q.scales.end(), scales);
    std::copy(q.biases.begin(), q.biases.end(), biases);
  });
}

hone_status hone_dequantize_affine(const uint32_t *packed, const uint16_t *scales,
                                   const uint16_t *biases, int64_t n, int64_t k, int32_t bits,
                                   int32_t group, float *w) {
  return guarded([&] {
    require(packed, "hone_dequantize_affine", "packed");
    require(scales, "hone_dequantize_affine", "scales");
    require(biases, "hone_dequantize_affine", "biases");
    require(w, "hone_dequantize_affine", "w");
    check_affine(n, k, bits, group, "hone_dequantize_affine");
    const auto words = static_cast<size_t>(n * k * bits / 32);
    const auto groups = static_cast<size_t>(n * (k / group));
    hone::ops::cpu::AffineQuantized q;
    q.packed.assign(packed, packed + words);
    q.scales.assign(scales, scales + groups);
    q.biases.assign(biases, biases + groups);
    const std::vector<float> out = hone::ops::cpu::dequantize_affine(q, n, k, bits, group);
    std::copy(out.begin(), out.end(), w);
  });
}

hone_status hone_gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n,
                           int64_t k, void *stream) {
  return guarded([&] {
    require(x, "hone_gemv_bf16", "x");
    require(w, "hone_gemv_bf16", "w");
    require(y, "hone_gemv_bf16", "y");
    // The shape is judged before the device, so bad input reads the same everywhere.
    if (const hone::TunableOp *op = hone::Registry::global().find("gemv.bf16", "cuda"))
      op->validate(hone::Shape{{rows, n, k}, hone::DType::bf16});
    require_cuda("hone_gemv_bf16");
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::gemv_bf16(x, w, y, rows, n, k, stream);
#else
    (void)stream;
#endif
  });
}

hone_status hone_qmv_affine_bf16(const void *x, const uint32_t *q, const void *scales,
                                 const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                                 int32_t bits, int32_t group, void *stream) {
  return guarded([&] {
    const char *function = "hone_qmv_affine_bf16";
    require(function, {{"x", x}, {"q", q}, {"scales", scales}, {"biases", biases}, {"y", y}});
    // Everything is judged before the device, so bad input reads the same everywhere.
    check_affine(n, k, bits, group, function);
    if (rows < 1 || rows > 32)
      fail(HONE_ERROR_INVALID_ARGUMENT,
           std::string(function) + ": rows=" + std::to_string(rows) + " outside 1..32");
    require_aligned(16, function, {{"x", x}, {"q", q}});
    if (const hone::TunableOp *op = hone::Registry::global().find("qmv.affine", "cuda"))
      op->validate(hone::Shape{{rows, n, k, bits, group}, hone::DType::bf16});
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::qmv_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream);
#else
    (void)stream;
#endif
  });
}

hone_status hone_qmm_affine_bf16(const void *x, const uint32_t *q, const void *scales,
                                 const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                                 int32_t bits, int32_t group, void *stream) {
  return affine_linear_bf16(
      "hone_qmm_affine_bf16", "qmm.affine", x, q, scales, biases, y, rows, n, k, bits, group, [&] {
#ifdef HONE_WITH_CUDA
        hone::ops::cuda::qmm_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream);
#else
                              (void)stream;
#endif
      });
}

hone_status hone_quantized_linear_bf16(const void *x, const uint32_t *q, const void *scales,
                                       const void *biases, void *y, int64_t rows, int64_t n,
                                       int64_t k, int32_t bits, int32_t group, void *stream) {
  return affine_linear_bf16("hone_quantized_linear_bf16", "quantized_linear", x, q, scales, biases,
                            y, rows, n, k, bits, group, [&] {
#ifdef HONE_WITH_CUDA
                              hone::ops::cuda::quantized_linear(x, q, scales, biases, y, rows, n, k,
                                                                bits, group, stream);
#else
                              (void)stream;
#endif
                            });
}

hone_status hone_decode_paged_bf16(const void *q, const void *k_cache, const void *v_cache,
                                   const int32_t *kv_indptr, const int32_t *kv_indices,
                                   const int32_t *kv_last_page_len, const int32_t *kv_indptr_host,
                                   const int32_t *kv_last_page_len_host, void *o, float *lse,
                                   int64_t batch, int64_t num_pages, int64_t hq, int64_t hkv,
                                   int64_t head_dim, int64_t page_size, float scale, void *stream) {
  return guarded([&] {
    const char *function = "hone_decode_paged_bf16";
    require(function, {{"q", q},
                       {"k_cache", k_cache},
                       {"v_cache", v_cache},
                       {"kv_indptr", kv_indptr},
                       {"kv_indices", kv_indices},
                       {"kv_last_page_len", kv_last_page_len},
                       {"kv_indptr_host", kv_indptr_host},
                       {"kv_last_page_len_host", kv_last_page_len_host},
                       {"o", o}});
    // Everything the host can judge is judged before the device, so bad input reads the same
    // everywhere (the page table from its host copy).
    if (batch < 1)
      fail(HONE_ERROR_INVALID_ARGUMENT,
           std::string(function) + ": batch=" + std::to_string(batch) + " is below 1");
    if (num_pages < 1)
      fail(HONE_ERROR_INVALID_ARGUMENT,
           std::string(function) + ": num_pages=" + std::to_string(num_pages) + " is below 1");
    require_aligned(16, function, {{"q", q}, {"k_cache", k_cache}, {"v_cache", v_cache}, {"o", o}});
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::decode_paged_validate(kv_indptr_host, kv_last_page_len_host, batch, hq, hkv,
                                           head_dim, page_size);
#endif
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::DecodePagedTensors t;
    t.q = q;
    t.k_cache = k_cache;
    t.v_cache = v_cache;
    t.kv_indptr = kv_indptr;
    t.kv_indices = kv_indices;
    t.kv_last_page_len = kv_last_page_len;
    t.kv_indptr_host = kv_indptr_host;
    t.kv_last_page_len_host = kv_last_page_len_host;
    t.o = o;
    t.lse = lse;
    t.batch = batch;
    t.num_pages = num_pages;
    t.hq = hq;
    t.hkv = hkv;
    t.head_dim = head_dim;
    t.page_size = page_size;
    t.scale = scale;
    hone::ops::cuda::decode_paged(t, stream);
#else
    (void)lse, (void)hq, (void)hkv, (void)head_dim, (void)page_size, (void)scale, (void)stream;
#endif
  });
}

namespace {

// The shape of a CUDA op, judged before the device so that bad input reads the same everywhere.
void validate_cuda_shape(const char *op, std::initializer_list<int64_t> dims) {
  if (const hone::TunableOp *found = hone::Registry::global().find(op, "cuda"))
    found->validate(
        hone::Shape{std::span<const int64_t>(dims.begin(), dims.size()), hone::DType::bf16});
}

#ifdef HONE_WITH_CUDA
// rope's tensors in place on q and k (hone_rope_bf16, hone_rope_kv_append_bf16).
hone::ops::cuda::RopeTensors rope_tensors(const void *q, const void *k, const int32_t *positions,
                                          int64_t rows, int64_t hq, int64_t hkv, int64_t head_dim,
                                          int64_t q_stride, int64_t k_stride, double theta,
                                          const double *llama3_scaling) {
  hone::ops::cuda::RopeTensors t;
  t.q = q;
  t.k = k;
  t.positions = positions;
  t.rows = rows;
  t.hq = hq;
  t.hkv = hkv;
  t.head_dim = head_dim;
  t.q_stride = q_stride;
  t.k_stride = k_stride;
  t.theta = theta;
  if (llama3_scaling) {
    t.llama3_factor = llama3_scaling[0];
    t.llama3_low_freq_factor = llama3_scaling[1];
    t.llama3_high_freq_factor = llama3_scaling[2];
    t.llama3_original_max_positions = llama3_scaling[3];
  }
  return t;
}

// kv_append's tensors (hone_kv_append_bf16; hone_rope_kv_append_bf16 without k).
hone::ops::cuda::KvAppendTensors kv_append_tensors(
    const void *k, const void *v, void *k_cache, void *v_cache, const int32_t *kv_indptr,
    const int32_t *kv_indices, const int32_t *kv_last_page_len, const int32_t *kv_indptr_host,
    const int32_t *kv_last_page_len_host, int64_t batch, int64_t num_pages, int64_t hkv,
    int64_t head_dim, int64_t page_size, int64_t k_stride, int64_t v_stride) {
  hone::ops::cuda::KvAppendTensors t;
  t.k = k;
  t.v = v;
  t.k_cache = k_cache;
  t.v_cache = v_cache;
  t.kv_indptr = kv_indptr;
  t.kv_indices = kv_indices;
  t.kv_last_page_len = kv_last_page_len;
  t.kv_indptr_host = kv_indptr_host;
  t.kv_last_page_len_host = kv_last_page_len_host;
  t.batch = batch;
  t.num_pages = num_pages;
  t.hkv = hkv;
  t.head_dim = head_dim;
  t.page_size = page_size;
  t.k_stride = k_stride;
  t.v_stride = v_stride;
  return t;
}
#endif

// The page table's pointers and num_pages of hone_kv_append_bf16 and hone_rope_kv_append_bf16.
void require_page_table(const char *function, const void *k_cache, const void *v_cache,
                        const int32_t *kv_indptr, const int32_t *kv_indices,
                        const int32_t *kv_last_page_len, const int32_t *kv_indptr_host,
                        const int32_t *kv_last_page_len_host, int64_t num_pages) {
  require(function, {{"k_cache", k_cache},
                     {"v_cache", v_cache},
                     {"kv_indptr", kv_indptr},
                     {"kv_indices", kv_indices},
                     {"kv_last_page_len", kv_last_page_len},
                     {"kv_indptr_host", kv_indptr_host},
                     {"kv_last_page_len_host", kv_last_page_len_host}});
  if (num_pages < 1)
    fail(HONE_ERROR_INVALID_ARGUMENT,
         std::string(function) + ": num_pages=" + std::to_string(num_pages) + " is below 1");
}

} // namespace

hone_status hone_rmsnorm_bf16(const void *x, const void *residual, void *residual_out,
                              const void *w, void *out, int64_t rows, int64_t hidden, float eps,
                              void *stream) {
  return guarded([&] {
    const char *function = "hone_rmsnorm_bf16";
    require(function, {{"x", x}, {"w", w}, {"out", out}});
    if (residual)
      require(residual_out, function, "residual_out");
    validate_cuda_shape("rmsnorm", {rows, hidden, residual ? 1 : 0});
    require_aligned(16, function, {{"x", x}, {"w", w}, {"out", out}});
    if (residual) {
      require_aligned(16, function, {{"residual", residual}, {"residual_out", residual_out}});
    }
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::RmsnormTensors t;
    t.x = x;
    t.residual = residual;
    t.residual_out = residual_out;
    t.w = w;
    t.out = out;
    t.rows = rows;
    t.hidden = hidden;
    t.eps = eps;
    hone::ops::cuda::rmsnorm(t, stream);
#else
    (void)eps, (void)stream;
#endif
  });
}

hone_status hone_rope_bf16(void *q, void *k, const int32_t *positions, int64_t rows, int64_t hq,
                           int64_t hkv, int64_t head_dim, int64_t q_stride, int64_t k_stride,
                           double theta, const double *llama3_scaling, void *stream) {
  return guarded([&] {
    const char *function = "hone_rope_bf16";
    require(function, {{"q", q}, {"k", k}, {"positions", positions}});
    validate_cuda_shape("rope", {rows, hq, hkv, head_dim});
    require_aligned(16, function, {{"q", q}, {"k", k}});
    require_aligned(positions, 4, function, "positions");
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::rope(rope_tensors(q, k, positions, rows, hq, hkv, head_dim, q_stride, k_stride,
                                       theta, llama3_scaling),
                          stream);
#else
    (void)q_stride, (void)k_stride, (void)theta, (void)llama3_scaling, (void)stream;
#endif
  });
}

hone_status hone_kv_append_bf16(const void *k, const void *v, void *k_cache, void *v_cache,
                                const int32_t *kv_indptr, const int32_t *kv_indices,
                                const int32_t *kv_last_page_len, const int32_t *kv_indptr_host,
                                const int32_t *kv_last_page_len_host, int64_t batch,
                                int64_t num_pages, int64_t hkv, int64_t head_dim, int64_t page_size,
                                int64_t k_stride, int64_t v_stride, void *stream) {
  return guarded([&] {
    const char *function = "hone_kv_append_bf16";
    require(function, {{"k", k}, {"v", v}});
    require_page_table(function, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                       kv_indptr_host, kv_last_page_len_host, num_pages);
    validate_cuda_shape("kv_append", {batch, hkv, head_dim, page_size});
    require_aligned(16, function, {{"k", k}, {"v", v}, {"k_cache", k_cache}, {"v_cache", v_cache}});
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::kv_append(kv_append_tensors(k, v, k_cache, v_cache, kv_indptr, kv_indices,
                                                 kv_last_page_len, kv_indptr_host,
                                                 kv_last_page_len_host, batch, num_pages, hkv,
                                                 head_dim, page_size, k_stride, v_stride),
                               stream);
#else
    (void)k_stride, (void)v_stride, (void)stream;
#endif
  });
}

hone_status hone_rope_kv_append_bf16(void *q, const void *k, const void *v, const void *qkv_bias,
                                     void *k_cache, void *v_cache, const int32_t *positions,
                                     const int32_t *kv_indptr, const int32_t *kv_indices,
                                     const int32_t *kv_last_page_len, const int32_t *kv_indptr_host,
                                     const int32_t *kv_last_page_len_host, int64_t batch,
                                     int64_t num_pages, int64_t hq, int64_t hkv, int64_t head_dim,
                                     int64_t page_size, int64_t q_stride, int64_t k_stride,
                                     int64_t v_stride, double theta, const double *llama3_scaling,
                                     void *stream) {
  return guarded([&] {
    const char *function = "hone_rope_kv_append_bf16";
    require(function, {{"q", q}, {"k", k}, {"v", v}, {"positions", positions}});
    require_page_table(function, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                       kv_indptr_host, kv_last_page_len_host, num_pages);
    validate_cuda_shape("rope", {batch, hq, hkv, head_dim});
    validate_cuda_shape("kv_append", {batch, hkv, head_dim, page_size});
    if (page_size != 16 && page_size != 32 && page_size != 64) // the pages decode.paged reads
      fail(HONE_ERROR_INVALID_ARGUMENT, std::string(function) + ": page_size=" +
                                            std::to_string(page_size) + " is not 16, 32 or 64");
    require_aligned(16, function,
                    {{"q", q}, {"k", k}, {"v", v}, {"k_cache", k_cache}, {"v_cache", v_cache}});
    if (qkv_bias)
      require_aligned(qkv_bias, 16, function, "qkv_bias");
    require_aligned(positions, 4, function, "positions");
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    const hone::ops::cuda::KvAppendTensors append = kv_append_tensors(
        nullptr, v, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, kv_indptr_host,
        kv_last_page_len_host, batch, num_pages, hkv, head_dim, page_size, 0, v_stride);
    hone::ops::cuda::RopeTensors t = rope_tensors(q, k, positions, batch, hq, hkv, head_dim,
                                                  q_stride, k_stride, theta, llama3_scaling);
    t.append = &append;
    t.qkv_bias = qkv_bias;
    hone::ops::cuda::rope(t, stream);
#else
    (void)q_stride, (void)k_stride, (void)v_stride, (void)theta, (void)llama3_scaling, (void)stream;
#endif
  });
}

hone_status hone_silu_mul_bf16(const void *gate, const void *up, void *out, int64_t rows,
                               int64_t inter, void *stream) {
  return guarded([&] {
    const char *function = "hone_silu_mul_bf16";
    require(function, {{"gate", gate}, {"out", out}});
    validate_cuda_shape("silu_mul", {rows, inter});
    require_aligned(gate, 16, function, "gate");
    if (up)
      require_aligned(up, 16, function, "up");
    require_aligned(out, 16, function, "out"); // with or without `up`
    require_cuda(function);
#ifdef HONE_WITH_CUDA
    hone::ops::cuda::SiluMulTensors t;
    if (up) {
      t.gate = gate;
      t.up = up;
    } else {
      t.gate_up = gate;
    }
    t.out = out;
    t.rows = rows;
    t.inter = inter;
    hone::ops::cuda::silu_mul(t, stream);
#else
    (void)stream;
#endif
  });
}

hone_status hone_tune(const char *op_name, const int64_t *dims, int32_t rank, const char *dtype,
                      uint32_t flags, char *out, size_t capacity, size_t *length) {
  return guarded([&] {
    find_op(op_name, "hone_tune"); // an unknown op is named before anything else
    require(dims, "hone_tune", "dims");
    std::optional<hone::DType> asked;
    if (dtype && *dtype)
      asked = hone::parse_dtype(dtype);
    const hone::TunableOp &op = find_op(op_name, "hone_tune", asked);
    const int expected = static_cast<int>(op.buckets().dims.size());
    if (rank != expected)
      fail(HONE_ERROR_INVALID_ARGUMENT, "hone_tune: " + std::string(op.name()) + " takes " +
                                            std::to_string(expected) + " dimensions (" +
                                            dim_names(op) + "), got rank=" + std::to_string(rank));
    const hone::DType type = asked ? *asked : op.dtype();
    const hone::Shape shape(std::span<const int64_t>(dims, static_cast<size_t>(rank)), type);
    op.validate(shape);
    const std::optional<hone::Shape> bucket = op.buckets().map(shape);
    if (!bucket)
      fail(HONE_ERROR_INVALID_ARGUMENT, "hone_tune: " + std::string(op.name()) + ": shape " +
                                            op.buckets().describe(shape) +
                                            " is outside the op's buckets");
    op.validate(*bucket);
    if (op.backend() == "cuda")
      require_cuda("hone_tune: " + std::string(op.name()));
    hone::Backend &backend = hone::get_backend(op.backend());

    hone::TuningStore store = hone::TuningStore::open(backend, hone::settings());
    const hone::TunedPick pick =
        store.find_or_tune(op, *bucket, hone::TuneOptions{}, (flags & HONE_TUNE_FORCE) != 0);
    write_string(pick.tactic.str(), out, capacity, length, "hone_tune");
    if (!pick.save_error.empty())
      fail(HONE_ERROR_RUNTIME, "hone_tune: tuned " + pick.entry.key + " (pick " +
                                   pick.tactic.str() +
                                   ", written to out) but could not save it: " + pick.save_error);
  });
}

hone_status hone_cache_path(char *out, size_t capacity, size_t *length) {
  return guarded([&] {
    write_string(hone::Cache::default_path().string(), out, capacity, length, "hone_cache_path");
  });
}

hone_status hone_cache_verify(int32_t *problems, char *out, size_t capacity, size_t *length) {
  return guarded([&] {
    hone::Cache cache(hone::Cache::default_path());
    cache.load();
    const std::vector<hone::VerifyItem> found = hone::audit_cache(cache).problems();
    if (problems)
      *problems = static_cast<int32_t>(found.size());
    std::string text;
    for (const hone::VerifyItem &item : found)
      text += item.problem + "  " + (item.key.empty() ? cache.path().string() : item.key) + "  " +
              item.reason + "\n";
    if (out != nullptr || capacity > 0 || length != nullptr)
      write_string(text, out, capacity, length, "hone_cache_verify");
  });
}

hone_status hone_cache_clear(void) {
  return guarded([&] { hone::Cache(hone::Cache::default_path()).clear(); });
}

} // extern "C"

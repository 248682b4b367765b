#include "cuda/ops/kv_append_op.h"

#include <optional>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxBatch = 4096;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kMaxPageSize = 1024;

size_t bf16_bytes(int64_t elements) { return static_cast<size_t>(elements) * sizeof(uint16_t); }
std::string str(int64_t v) { return std::to_string(v); }

} // namespace

KvAppendGateTable kv_append_gate_table(int batch, int page_size) {
  KvAppendGateTable t;
  t.num_pages = (batch + page_size - 1) / page_size;
  t.indptr.push_back(0);
  for (int b = 0; b < batch; ++b) {
    const int last_page = b / page_size;
    // 1 to 3 pages; the earlier ones are valid pages, other than the last where the table
    // has more than one.
    for (int extra = b % 3; extra > 0; --extra)
      t.indices.push_back((last_page + extra) % t.num_pages);
    t.indices.push_back(last_page);
    t.indptr.push_back(static_cast<int32_t>(t.indices.size()));
    t.last_page_len.push_back(b % page_size + 1);
  }
  return t;
}

// --- workload -------------------------------------------------------------------------------

KvAppendWorkload::KvAppendWorkload(CudaBackend &backend, int batch, int hkv, int head_dim,
                                   int page_size)
    : CudaWorkloadOf(backend, 2 * int64_t{batch} * hkv, head_dim, kKvAppendRelativeL2Bound),
      batch_(batch), hkv_(hkv), head_dim_(head_dim), page_size_(page_size),
      table_(kv_append_gate_table(batch, page_size)) {
  const auto upload = [&](DeviceBuffer &dst, const std::vector<int32_t> &src) {
    dst = DeviceBuffer(src.size() * sizeof(int32_t));
    HONE_CUDA_CHECK(
        cudaMemcpyAsync(dst.data(), src.data(), dst.size(), cudaMemcpyHostToDevice, stream()));
  };
  upload(indptr_, table_.indptr);
  upload(indices_, table_.indices);
  upload(last_, table_.last_page_len);
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

size_t KvAppendWorkload::bytes_per_launch() const {
  const size_t table =
      (table_.indptr.size() + table_.indices.size() + table_.last_page_len.size()) *
      sizeof(int32_t);
  return 4 * bf16_bytes(int64_t{batch_} * hkv_ * head_dim_) + table;
}

KvAppendInputs KvAppendWorkload::make_copy() const {
  const size_t bytes = bf16_bytes(int64_t{batch_} * hkv_ * head_dim_);
  return {DeviceBuffer(bytes), DeviceBuffer(bytes)};
}

void KvAppendWorkload::fill_copy(size_t copy) {
  const KvAppendInputs &in = copies_.at(copy);
  fill_random_bf16(in.k.data(), in.k.size() / 2, next_random_seed(), stream());
  fill_random_bf16(in.v.data(), in.v.size() / 2, next_random_seed(), stream());
}

std::optional<std::string> KvAppendWorkload::cannot_implement(const Tactic &tactic) const {
  KvAppendConfig config;
  try {
    config = KvAppendConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !kv_append_can_implement(config, batch_, hkv_, head_dim_, &why))
    return why;
  return std::nullopt;
}

std::optional<KernelResources> KvAppendWorkload::resources(const Tactic &tactic) const {
  return kv_append_resources(KvAppendConfig::from_tactic(tactic));
}

LaunchStatus KvAppendWorkload::launch(const KvAppendConfig &config, int copy) {
  const KvAppendInputs &in = copy_at(copy);
  KvAppendArgs a;
  a.k = in.k.data();
  a.v = in.v.data();
  a.k_cache = y();
  a.v_cache = static_cast<uint16_t *>(y()) + int64_t{batch_} * hkv_ * head_dim_;
  a.kv_indptr = indptr_.as<const int32_t>();
  a.kv_indices = indices_.as<const int32_t>();
  a.kv_last_page_len = last_.as<const int32_t>();
  a.batch = batch_;
  a.hkv = hkv_;
  a.head_dim = head_dim_;
  a.page_size = page_size_;
  a.num_pages = table_.num_pages;
  return kv_append_launch(config, a, stream());
}

LaunchStatus KvAppendWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy);
}

std::vector<double> KvAppendWorkload::reference() const {
  // Slot b of each cache is request b's token: y is k then v, as they are.
  const size_t n = static_cast<size_t>(batch_) * hkv_ * head_dim_;
  const std::vector<uint16_t> k = download<uint16_t>(copy_at(0).k.data(), n, stream());
  const std::vector<uint16_t> v = download<uint16_t>(copy_at(0).v.data(), n, stream());
  std::vector<double> out;
  out.reserve(2 * n);
  for (uint16_t bits : k)
    out.push_back(bf16_to_float(bits));
  for (uint16_t bits : v)
    out.push_back(bf16_to_float(bits));
  return out;
}

// --- op ---------------------------------------------------------------------------------------

KvAppendOp::KvAppendOp()
    : CudaOp("kv_append",
             BucketSpec{{DimSpec::exact_then_pow2_up("batch", 1, kMaxBatch, 8),
                         DimSpec::exact("hkv", 1, kMaxHeads),
                         DimSpec::exact("head_dim", 8, kMaxHeadDim),
                         DimSpec::exact("page_size", 1, kMaxPageSize)}},
             Numerics::tolerance) {}

std::vector<Tactic> KvAppendOp::candidates(const Shape &bucket) const {
  const int batch = static_cast<int>(bucket[0]), hkv = static_cast<int>(bucket[1]),
            head_dim = static_cast<int>(bucket[2]);
  return default_first(kv_append_default(batch, hkv, head_dim), kv_append_configs(),
                       [&](const KvAppendConfig &c) {
                         return kv_append_can_implement(c, batch, hkv, head_dim, nullptr);
                       });
}

Tactic KvAppendOp::default_tactic(const Shape &bucket) const {
  return kv_append_default(static_cast<int>(bucket[0]), static_cast<int>(bucket[1]),
                           static_cast<int>(bucket[2]))
      .to_tactic();
}

void KvAppendOp::validate(const Shape &shape) const {
  if (shape.rank != 4)
    HONE_INVALID_ARGUMENT("kv_append takes 4 dimensions (batch, hkv, head_dim, page_size), got " +
                          str(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("kv_append takes dtype bf16, got " + std::string(to_string(shape.dtype)));
  const int64_t batch = shape[0], hkv = shape[1], head_dim = shape[2], page_size = shape[3];
  if (batch < 1 || batch > kMaxBatch)
    HONE_INVALID_ARGUMENT("kv_append: batch=" + str(batch) + " outside 1.." + str(kMaxBatch));
  if (hkv < 1 || hkv > kMaxHeads)
    HONE_INVALID_ARGUMENT("kv_append: hkv=" + str(hkv) + " outside 1.." + str(kMaxHeads));
  if (head_dim < 8 || head_dim > kMaxHeadDim || head_dim % 8 != 0)
    HONE_INVALID_ARGUMENT("kv_append: head_dim=" + str(head_dim) +
                          " is not a multiple of 8 in 8.." + str(kMaxHeadDim));
  if (page_size < 1 || page_size > kMaxPageSize)
    HONE_INVALID_ARGUMENT("kv_append: page_size=" + str(page_size) + " outside 1.." +
                          str(kMaxPageSize));
}

CompiledTactic KvAppendOp::compile(const Tactic &tactic) const {
  return compile_config<KvAppendConfig>(name(), tactic, {&kv_append_configs()});
}

std::optional<WorkloadBytes> KvAppendOp::workload_bytes(const Shape &shape) const {
  const int64_t token = shape[0] * shape[1] * shape[2];
  WorkloadBytes b;
  b.per_copy = 2 * bf16_bytes(token);
  b.fixed = CudaWorkload::output_bytes(2 * shape[0] * shape[1], shape[2]) +
            static_cast<size_t>(4 * shape[0] + 1) * sizeof(int32_t);
  return b;
}

std::unique_ptr<Workload> KvAppendOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<KvAppendWorkload>(cuda_backend(), static_cast<int>(shape[0]),
                                            static_cast<int>(shape[1]), static_cast<int>(shape[2]),
                                            static_cast<int>(shape[3]));
}

} // namespace hone::cuda

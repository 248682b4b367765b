#include "cuda/ops/decode_paged_op.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "cuda/kernels/decode_paged/decode_paged_shape.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int kNominalSms = 132; // H200, for listings without a device
constexpr int64_t kMaxBatch = 4096;
constexpr int64_t kMaxLen = int64_t{1} << 22;
constexpr int64_t kMaxTotal = int64_t{1} << 30;
constexpr int64_t kMaxHeads = 1024;

size_t bf16_bytes(int64_t elements) { return static_cast<size_t>(elements) * sizeof(uint16_t); }

std::string str(int64_t v) { return std::to_string(v); }

// Elements of one cache: num_pages x page_size x hkv x head_dim.
int64_t cache_elements(const DecodePagedProblem &p, const DecodePagedTable &t) {
  return static_cast<int64_t>(t.num_pages) * p.page_size * p.hkv * p.head_dim;
}

} // namespace

DecodePagedMachine decode_paged_machine(int warps, int head_dim) {
  DecodePagedMachine m{kNominalSms, 0};
  if (device_present()) {
    m.sms = cuda_backend().info().compute_units;
    m.ctas_per_sm = decode_paged_ctas_per_sm(warps, head_dim);
  }
  if (m.ctas_per_sm <= 0) // no device: what shared memory alone allows
    m.ctas_per_sm = std::max(1, static_cast<int>(kDecodePagedMaxSharedBytes /
                                                 decode_paged_shared_bytes(warps, head_dim)));
  return m;
}

DecodePagedConfig decode_paged_default_config(std::span<const int32_t> kv_indptr, int hkv,
                                              int head_dim, int page_size) {
  DecodePagedConfig c;
  c.warps = decode_paged_default_warps(head_dim);
  c.kv_chunk = decode_paged_default_chunk(kv_indptr, page_size, hkv, c.warps,
                                          decode_paged_machine(c.warps, head_dim));
  return c;
}

std::vector<DecodePagedConfig> decode_paged_candidate_configs(std::span<const int32_t> kv_indptr,
                                                              int hkv, int head_dim,
                                                              int page_size) {
  const DecodePagedConfig first = decode_paged_default_config(kv_indptr, hkv, head_dim, page_size);
  std::vector<DecodePagedConfig> out{first};
  const auto add = [&](DecodePagedConfig c) {
    if (std::find(out.begin(), out.end(), c) == out.end() &&
        decode_paged_can_implement(c, hkv, head_dim, page_size, nullptr))
      out.push_back(c);
  };
  for (int chunk : decode_paged_candidate_chunks(kv_indptr, page_size, hkv, first.warps,
                                                 decode_paged_machine(first.warps, head_dim)))
    add({chunk, first.warps});
  for (int warps : {2, 4, 8})
    add({first.kv_chunk, warps});
  return out;
}

std::vector<DecodePagedConfig> decode_paged_kv_heads_configs(std::span<const int32_t> kv_indptr,
                                                             int hkv, int head_dim,
                                                             int page_size) {
  std::vector<DecodePagedConfig> out;
  for (const auto &[warps, heads] : {std::pair{8, 2}, std::pair{8, 4}, std::pair{8, 8},
                                    std::pair{4, 2}, std::pair{4, 4}}) {
    if (hkv % heads != 0 ||
        !decode_paged_can_implement({0, warps, 0, heads}, hkv, head_dim, page_size, nullptr))
      continue;
    // The heuristic's chunk for hkv / heads CTAs per work item.
    out.push_back({decode_paged_default_chunk(kv_indptr, page_size, hkv / heads, warps,
                                              decode_paged_machine(warps, head_dim)),
                   warps, 0, heads});
  }
  return out;
}

// --- workload -----------------------------------------------------------------------------

DecodePagedWorkload::DecodePagedWorkload(CudaBackend &backend, DecodePagedProblem problem,
                                         double scale, uint64_t table_seed)
    : CudaWorkloadOf(backend, static_cast<int64_t>(problem.batch()) * problem.hq, problem.head_dim,
                     kDecodePagedRelativeL2Bound),
      p_(std::move(problem)), table_(decode_paged_table(p_, table_seed)),
      scale_(scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p_.head_dim))),
      reference_rows_(decode_paged_reference_rows(p_)) {
  const auto upload = [&](DeviceBuffer &dst, const std::vector<int32_t> &src) {
    dst = DeviceBuffer(src.size() * sizeof(int32_t));
    HONE_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), dst.size(), cudaMemcpyHostToDevice,
                                    stream()));
  };
  upload(indptr_, table_.indptr);
  upload(indices_, table_.indices);
  upload(last_, table_.last_page_len);
  counters_ = DeviceBuffer(decode_paged_counter_count(p_.batch(), p_.hkv) * sizeof(int32_t));
  HONE_CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.size(), stream()));
  // Every candidate's partial states exist before any stream capture (tuning times graphs).
  size_t most = 0;
  for (const DecodePagedConfig &c :
       decode_paged_candidate_configs(table_.indptr, p_.hkv, p_.head_dim, p_.page_size))
    most = std::max(most, decode_paged_workspace_bytes(split(c), p_.hq, p_.head_dim));
  for (const DecodePagedConfig &c :
       decode_paged_kv_heads_configs(table_.indptr, p_.hkv, p_.head_dim, p_.page_size))
    most = std::max(most, decode_paged_workspace_bytes(split(c), p_.hq, p_.head_dim));
  reserve_workspace(most);
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

size_t DecodePagedWorkload::kv_bytes() const {
  return 2 * bf16_bytes(p_.total_len() * p_.hkv * p_.head_dim);
}

size_t DecodePagedWorkload::bytes_per_launch() const {
  const int64_t heads = static_cast<int64_t>(p_.batch()) * p_.hq;
  const size_t table = (table_.indices.size() + table_.indptr.size() +
                        table_.last_page_len.size()) * sizeof(int32_t);
  return kv_bytes() + 2 * bf16_bytes(heads * p_.head_dim) + table;
}

void DecodePagedWorkload::set_write_lse(bool write) {
  write_lse_ = write;
  const size_t bytes = static_cast<size_t>(p_.batch()) * p_.hq * sizeof(float);
  if (write && lse_.size() < bytes)
    lse_ = DeviceBuffer(bytes);
}

std::vector<float> DecodePagedWorkload::download_lse() const {
  return download<float>(lse_.data(), static_cast<size_t>(p_.batch()) * p_.hq, stream());
}

std::vector<int32_t> DecodePagedWorkload::download_counters() const {
  return download<int32_t>(counters_.data(), counters_.size() / sizeof(int32_t), stream());
}

DecodePagedReference DecodePagedWorkload::reference_of(int copy) const {
  const int64_t heads = static_cast<int64_t>(p_.batch()) * p_.hq;
  const std::vector<uint16_t> q =
      download<uint16_t>(this->q(copy), static_cast<size_t>(heads * p_.head_dim), stream());
  const auto cache = static_cast<size_t>(cache_elements(p_, table_));
  const std::vector<uint16_t> k = download<uint16_t>(k_cache(copy), cache, stream());
  const std::vector<uint16_t> v = download<uint16_t>(v_cache(copy), cache, stream());
  return decode_paged_reference(p_, table_, q.data(), k.data(), v.data(), scale_);
}

DecodePagedReference DecodePagedWorkload::sampled_reference_of(int copy) const {
  std::vector<int64_t> rows = reference_rows_;
  if (rows.empty()) {
    rows.resize(static_cast<size_t>(output_rows()));
    std::iota(rows.begin(), rows.end(), int64_t{0});
  }
  const int64_t d = p_.head_dim;
  BlockLayout q_rows{{}, 1, d, d};
  for (int64_t r : rows)
    q_rows.offsets.push_back(r * d);
  // Each block: one page's token rows of one KV head.
  const BlockLayout kv{decode_paged_kv_block_offsets(p_, table_, decode_paged_kv_heads(p_, rows)),
                       p_.page_size, d, int64_t{p_.hkv} * d};
  const std::vector<uint16_t> q = download_blocks<uint16_t>(this->q(copy), q_rows, stream());
  const std::vector<uint16_t> k = download_blocks<uint16_t>(k_cache(copy), kv, stream());
  const std::vector<uint16_t> v = download_blocks<uint16_t>(v_cache(copy), kv, stream());
  return decode_paged_sampled_reference(p_, rows, q.data(), k.data(), v.data(), scale_);
}

DecodePagedSplit DecodePagedWorkload::split(const DecodePagedConfig &config) const {
  return decode_paged_split(table_.indptr, p_.page_size, config.kv_chunk);
}

void DecodePagedWorkload::reserve_workspace(size_t bytes) {
  if (bytes > workspace_.size())
    workspace_ = DeviceBuffer(bytes); // cudaFree of the old one waits for the device
}

DecodePagedInputs DecodePagedWorkload::make_copy() const {
  const int64_t q_elements = static_cast<int64_t>(p_.batch()) * p_.hq * p_.head_dim;
  return {DeviceBuffer(bf16_bytes(q_elements)),
          DeviceBuffer(bf16_bytes(cache_elements(p_, table_))),
          DeviceBuffer(bf16_bytes(cache_elements(p_, table_)))};
}

void DecodePagedWorkload::fill_copy(size_t copy) {
  const DecodePagedInputs &in = copies_.at(copy);
  fill_random_bf16(in.q.data(), in.q.size() / 2, next_random_seed(), stream());
  fill_random_bf16(in.k_cache.data(), in.k_cache.size() / 2, next_random_seed(), stream());
  fill_random_bf16(in.v_cache.data(), in.v_cache.size() / 2, next_random_seed(), stream());
  // NaN (0xFFFF) where no token lives -- the slots past each request's last token and the
  // spare pages -- so that a kernel reading them, or a wrong page, poisons its output.
  const size_t token_bytes = bf16_bytes(static_cast<int64_t>(p_.hkv) * p_.head_dim);
  const size_t page_bytes = token_bytes * p_.page_size;
  for (const DeviceBuffer *cache : {&in.k_cache, &in.v_cache}) {
    auto *base = static_cast<unsigned char *>(cache->data());
    HONE_CUDA_CHECK(cudaMemsetAsync(base + page_bytes * table_.used, 0xff,
                                    page_bytes * (table_.num_pages - table_.used), stream()));
    for (int b = 0; b < p_.batch(); ++b) {
      const int32_t last = table_.last_page_len[static_cast<size_t>(b)];
      if (last == p_.page_size)
        continue;
      const int32_t page =
          table_.indices[static_cast<size_t>(table_.indptr[static_cast<size_t>(b) + 1] - 1)];
      HONE_CUDA_CHECK(cudaMemsetAsync(base + page_bytes * page + token_bytes * last, 0xff,
                                      token_bytes * (p_.page_size - last), stream()));
    }
  }
}

std::optional<std::string> DecodePagedWorkload::cannot_implement(const Tactic &tactic) const {
  DecodePagedConfig config;
  try {
    config = DecodePagedConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why;
      !decode_paged_can_implement(config, p_.hkv, p_.head_dim, p_.page_size, &why))
    return why;
  return std::nullopt;
}

std::optional<KernelResources> DecodePagedWorkload::resources(const Tactic &tactic) const {
  KernelResources res = decode_paged_resources(p_.head_dim);
  res.shared_bytes += decode_paged_shared_bytes(DecodePagedConfig::from_tactic(tactic).warps,
                                                p_.head_dim);
  return res;
}

LaunchStatus DecodePagedWorkload::launch(const DecodePagedConfig &config, int copy) {
  const DecodePagedInputs &in = copy_at(copy);
  DecodePagedArgs a;
  a.q = in.q.data();
  a.k_cache = in.k_cache.data();
  a.v_cache = in.v_cache.data();
  a.kv_indptr = kv_indptr();
  a.kv_indices = kv_indices();
  a.kv_last_page_len = kv_last_page_len();
  a.o = y();
  a.lse = write_lse_ ? lse() : nullptr;
  a.batch = p_.batch();
  a.hq = p_.hq;
  a.hkv = p_.hkv;
  a.head_dim = p_.head_dim;
  a.page_size = p_.page_size;
  a.scale = static_cast<float>(scale_);
  a.split = split(config);
  const size_t need = decode_paged_workspace_bytes(a.split, p_.hq, p_.head_dim);
  if (need > workspace_.size()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    HONE_CUDA_CHECK(cudaStreamIsCapturing(stream(), &capture));
    if (capture != cudaStreamCaptureStatusNone)
      HONE_RUNTIME_ERROR("decode.paged " + config.to_tactic().str() + " needs " + str(need) +
                         " bytes of workspace, more than reserved before this stream capture; "
                         "launch it once outside the capture first");
    reserve_workspace(need);
  }
  a.workspace = workspace_.data();
  a.workspace_bytes = workspace_.size();
  a.counters = counters_.as<int32_t>();
  a.counter_count = counters_.size() / sizeof(int32_t);
  return decode_paged_launch(config, a, stream());
}

LaunchStatus DecodePagedWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy);
}

// --- op -----------------------------------------------------------------------------------

DecodePagedOp::DecodePagedOp()
    : buckets_{{DimSpec::pow2("batch", 1, kMaxBatch), DimSpec::pow2("max_len", 1, kMaxLen),
                DimSpec::pow2("total_len", 1, kMaxTotal), DimSpec::exact("hq", 1, kMaxHeads),
                DimSpec::exact("hkv", 1, kMaxHeads), DimSpec::one_of("head_dim", {64, 128, 256}),
                DimSpec::one_of("page_size", {16, 32, 64})}} {}

std::vector<Tactic> DecodePagedOp::candidates(const Shape &bucket) const {
  const DecodePagedProblem p = decode_paged_problem(bucket);
  std::vector<Tactic> out;
  for (const DecodePagedConfig &c :
       decode_paged_candidate_configs(p.indptr(), p.hkv, p.head_dim, p.page_size))
    out.push_back(c.to_tactic());
  return out;
}

Tactic DecodePagedOp::default_tactic(const Shape &bucket) const {
  const DecodePagedProblem p = decode_paged_problem(bucket);
  return decode_paged_default_config(p.indptr(), p.hkv, p.head_dim, p.page_size).to_tactic();
}

void DecodePagedOp::validate(const Shape &shape) const {
  if (shape.rank != 7)
    HONE_INVALID_ARGUMENT("decode.paged takes 7 dimensions (batch, max_len, total_len, hq, hkv, "
                          "head_dim, page_size), got " +
                          str(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("decode.paged takes dtype bf16, got " +
                          std::string(to_string(shape.dtype)));
  const int64_t batch = shape[0], max_len = shape[1], total = shape[2];
  if (batch < 1 || batch > kMaxBatch)
    HONE_INVALID_ARGUMENT("decode.paged: batch=" + str(batch) + " outside 1.." + str(kMaxBatch));
  if (max_len < 1 || max_len > kMaxLen)
    HONE_INVALID_ARGUMENT("decode.paged: max_len=" + str(max_len) + " outside 1..2^22");
  if (total < 1 || total > kMaxTotal)
    HONE_INVALID_ARGUMENT("decode.paged: total_len=" + str(total) + " outside 1..2^30");
  if (max_len > total)
    HONE_INVALID_ARGUMENT("decode.paged: max_len=" + str(max_len) + " exceeds total_len=" +
                          str(total));
  if (total < batch)
    HONE_INVALID_ARGUMENT("decode.paged: total_len=" + str(total) + " is below batch=" +
                          str(batch) + " (every request has at least one token)");
  if (shape[3] > kMaxHeads || shape[4] > kMaxHeads)
    HONE_INVALID_ARGUMENT("decode.paged: hq=" + str(shape[3]) + ", hkv=" + str(shape[4]) +
                          ": at most " + str(kMaxHeads) + " heads");
  decode_paged_validate_heads(shape[3], shape[4], shape[5], shape[6]);
}

std::unique_ptr<Workload> DecodePagedOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<DecodePagedWorkload>(cuda_backend(), decode_paged_problem(shape), 0.0,
                                               next_random_seed());
}

} // namespace hone::cuda

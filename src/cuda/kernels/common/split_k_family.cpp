#include "cuda/kernels/common/split_k_family.h"

#include <iterator>

#include <cuda_runtime.h>

#include "cuda/kernels/common/config_tactic.h"
#include "cuda/kernels/common/split_k_launch.h"

namespace hone::cuda {

namespace {

// Largest dynamic shared memory `fn` may use: the device's opt-in limit (capped at
// kSplitKMaxAsyncSharedBytes), set on each ring kernel once, at its first launch.
size_t opt_in_shared_limit(const void *fn) {
  return std::min(shared_memory_opt_in(fn), kSplitKMaxAsyncSharedBytes);
}

} // namespace

int split_k_fill_slices(int tiles, int chunk_k, int k, int max_slices) {
  int slices = 1;
  while (slices < max_slices && 2 * slices * tiles <= kSplitKFillWarps && 2 * slices * chunk_k <= k)
    slices *= 2;
  return slices;
}

void set_default_cta(SplitKCta &c, int k_slices, int warps_at_2, bool pair_at_8, bool pair_at_16) {
  const auto set = [&c](int warps_k, int split_k, int warps) {
    c.warps_k = warps_k, c.split_k = split_k, c.warps = warps;
  };
  switch (k_slices) {
  case 1:
    return set(1, 1, 4);
  case 2:
    return set(2, 1, warps_at_2);
  case 4:
    return set(4, 1, 4);
  case 8:
    return pair_at_8 ? set(4, 2, 4) : set(8, 1, 8);
  default:
    return pair_at_16 ? set(8, 2, 8) : set(16, 1, 16);
  }
}

namespace {
constexpr const char *kCtaFieldNames[] = {"rows_per_cta", "warps", "warps_k", "outputs_per_warp",
                                          "split_k"};
constexpr size_t kCtaFields = std::size(kCtaFieldNames);
constexpr const char *kAsyncField = "async";

std::vector<const char *> field_names(std::span<const char *const> extra_names) {
  std::vector<const char *> names(std::begin(kCtaFieldNames), std::end(kCtaFieldNames));
  names.insert(names.end(), extra_names.begin(), extra_names.end());
  return names;
}
} // namespace

Tactic split_k_tactic(const std::string &kernel, const SplitKCta &cta,
                      std::span<const char *const> extra_names, std::span<const int> extra_values) {
  std::vector<int> values{cta.rows_per_cta, cta.warps, cta.warps_k, cta.outputs_per_warp,
                          cta.split_k};
  values.insert(values.end(), extra_values.begin(), extra_values.end());
  return config_tactic(kernel, field_names(extra_names), values, kAsyncField, cta.async);
}

std::vector<int> parse_split_k_tactic(const Tactic &tactic,
                                      std::span<const char *const> extra_names, SplitKCta &cta) {
  const std::vector<int> v =
      config_fields(tactic, field_names(extra_names), kAsyncField, &cta.async);
  cta.rows_per_cta = v[0];
  cta.warps = v[1];
  cta.warps_k = v[2];
  cta.outputs_per_warp = v[3];
  cta.split_k = v[4];
  return std::vector<int>(v.begin() + kCtaFields, v.end());
}

bool split_k_rows_fit(const SplitKCta &cta, int rows, int min_rows_per_cta, std::string *reason) {
  const auto refuse = [reason](std::string text) {
    if (reason)
      *reason = std::move(text);
    return false;
  };
  if (cta.rows_per_cta > min_rows_per_cta && cta.rows_per_cta >= 2 * rows)
    return refuse("rows_per_cta=" + std::to_string(cta.rows_per_cta) +
                  " pads rows=" + std::to_string(rows) + " to more than twice");
  const int row_groups = (rows + cta.rows_per_cta - 1) / cta.rows_per_cta;
  if (row_groups > 2)
    return refuse("rows_per_cta=" + std::to_string(cta.rows_per_cta) + " reads W " +
                  std::to_string(row_groups) + " times for rows=" + std::to_string(rows));
  return true;
}

bool weights_once_rows_fit(const SplitKCta &cta, int rows, const char *path, std::string *reason) {
  if (rows > cta.rows_per_cta)
    return refuse(reason, "rows_per_cta=" + std::to_string(cta.rows_per_cta) +
                              " < rows=" + std::to_string(rows) + " (the " + path +
                              " path reads the weights once for all rows)");
  if (cta.rows_per_cta > 8 && cta.rows_per_cta >= 2 * rows)
    return refuse(reason, "rows_per_cta=" + std::to_string(cta.rows_per_cta) +
                              " pads rows=" + std::to_string(rows) + " to more than twice");
  return true;
}

size_t split_k_shared_bytes(const SplitKKernel &kernel, int warps, bool async) {
  const size_t partials =
      static_cast<size_t>(warps) * static_cast<size_t>(kernel.floats_per_warp) * sizeof(float);
  const size_t ring =
      async ? static_cast<size_t>(warps) * static_cast<size_t>(kernel.async_bytes_per_warp) : 0;
  return partials + ring;
}

KernelResources split_k_resources(std::span<const void *const> fns, size_t dynamic_shared_bytes) {
  KernelResources res;
  size_t static_shared = 0;
  bool first = true;
  for (const void *fn : fns) {
    if (fn == nullptr) // a form the slot does not compile
      continue;
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, fn) != cudaSuccess) {
      (void)cudaGetLastError();
      return KernelResources{};
    }
    res.registers = std::max(res.registers, attr.numRegs);
    res.local_bytes = std::max(res.local_bytes, attr.localSizeBytes);
    res.max_threads =
        first ? attr.maxThreadsPerBlock : std::min(res.max_threads, attr.maxThreadsPerBlock);
    first = false;
    static_shared = std::max(static_shared, attr.sharedSizeBytes);
  }
  res.shared_bytes = static_shared + dynamic_shared_bytes;
  return res;
}

LaunchStatus launch_split_k_kernel(const SplitKKernel &kernel, const SplitKCta &cta, int n,
                                   int rows, void *params, void *stream, const void *fn,
                                   bool dependent, size_t extra_shared_bytes) {
  if ((cta.async != 0 && cta.async != 1) || (cta.async && !kernel.async_fn) || cta.warps_k < 1 ||
      cta.split_k < 1 || cta.warps < 1 || cta.warps % cta.warps_k != 0 ||
      cta.warps * 32 > kernel.max_threads || rows < 1 || n < 1)
    return LaunchStatus::invalid_value();
  if (!fn)
    fn = cta.async ? kernel.async_fn : kernel.fn;
  const size_t smem = split_k_shared_bytes(kernel, cta.warps, cta.async != 0) + extra_shared_bytes;
  if ((cta.async || smem > kSplitKMaxSharedBytes) && smem > opt_in_shared_limit(fn))
    return LaunchStatus::invalid_configuration();
  const SplitKGrid grid{.n = n,
                        .rows = rows,
                        .outputs_per_cta = (cta.warps / cta.warps_k) * cta.outputs_per_warp,
                        .rows_per_cta = cta.rows_per_cta,
                        .split_k = cta.split_k,
                        .threads = cta.warps * 32};
  return LaunchStatus::from_cuda(launch_split_k(grid, smem, fn, params, stream, dependent));
}

} // namespace hone::cuda

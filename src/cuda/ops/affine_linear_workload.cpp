#include "cuda/ops/affine_linear_workload.h"

#include <algorithm>

#include "cuda/backend/random_fill.h"

namespace hone::cuda {

namespace {

size_t elements(int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

size_t q_words(const QmvAffineProblem &p) { return elements(p.n, p.k) * p.bits / 32; }
size_t group_params(const QmvAffineProblem &p) { return elements(p.n, p.k / p.group); }

} // namespace

AffineLinearWorkload::AffineLinearWorkload(CudaBackend &backend, const QmvAffineProblem &problem)
    : CudaWorkloadOf(backend, problem.rows, problem.n, kAffineLinearRelativeL2Bound), p_(problem) {}

size_t AffineLinearWorkload::weight_bytes() const {
  return q_words(p_) * sizeof(uint32_t) + 2 * group_params(p_) * sizeof(uint16_t);
}

size_t AffineLinearWorkload::bytes_per_launch() const {
  return weight_bytes() + (elements(p_.rows, p_.k) + elements(p_.rows, p_.n)) * sizeof(uint16_t);
}

AffineLinearInputs AffineLinearWorkload::make_copy() const {
  return {DeviceBuffer(elements(p_.rows, p_.k) * sizeof(uint16_t)),
          DeviceBuffer(q_words(p_) * sizeof(uint32_t)),
          DeviceBuffer(group_params(p_) * sizeof(uint16_t)),
          DeviceBuffer(group_params(p_) * sizeof(uint16_t))};
}

void AffineLinearWorkload::fill_copy(size_t copy) {
  const AffineLinearInputs &in = copies_.at(copy);
  fill_random_bf16(in.x.data(), elements(p_.rows, p_.k), next_random_seed(), stream());
  fill_random_u32(in.q.data(), q_words(p_), next_random_seed(), stream());
  fill_random_affine_params(in.scales.data(), in.biases.data(), group_params(p_), p_.bits,
                            next_random_seed(), stream());
}

std::vector<uint16_t> AffineLinearWorkload::download_x(int copy) const {
  return download<uint16_t>(x(copy), elements(p_.rows, p_.k), stream());
}
std::vector<uint32_t> AffineLinearWorkload::download_q(int copy) const {
  return download<uint32_t>(q(copy), q_words(p_), stream());
}
std::vector<uint16_t> AffineLinearWorkload::download_scales(int copy) const {
  return download<uint16_t>(scales(copy), group_params(p_), stream());
}
std::vector<uint16_t> AffineLinearWorkload::download_biases(int copy) const {
  return download<uint16_t>(biases(copy), group_params(p_), stream());
}

int AffineLinearWorkload::reference_row_count() const {
  const double fit = kAffineLinearReferenceWork / (static_cast<double>(p_.n) * p_.k);
  return static_cast<int>(
      std::clamp<double>(fit, kAffineLinearMinReferenceRows, kAffineLinearReferenceRows));
}

std::vector<int64_t> AffineLinearWorkload::reference_rows() const {
  const int count = reference_row_count();
  if (p_.rows <= count)
    return {};
  // Evenly spread from the first row to the last, so that every M tile at least
  // (rows - 1) / (count - 1) rows tall holds a checked row; ascending and distinct since
  // rows > count.
  std::vector<int64_t> rows;
  const int64_t last = p_.rows - 1;
  for (int64_t i = 0; i < count; ++i)
    rows.push_back(i * last / (count - 1));
  return rows;
}

std::vector<double> AffineLinearWorkload::reference() const {
  const std::vector<int64_t> rows = reference_rows();
  std::vector<uint16_t> x = download_x(0);
  QmvAffineProblem p = p_;
  if (!rows.empty()) {
    std::vector<uint16_t> sampled;
    sampled.reserve(elements(static_cast<int64_t>(rows.size()), p_.k));
    for (int64_t r : rows)
      sampled.insert(sampled.end(), x.begin() + static_cast<std::ptrdiff_t>(elements(r, p_.k)),
                     x.begin() + static_cast<std::ptrdiff_t>(elements(r + 1, p_.k)));
    x = std::move(sampled);
    p.rows = static_cast<int>(rows.size());
  }
  return qmv_affine_reference(x, download_q(0), download_scales(0), download_biases(0), p);
}

} // namespace hone::cuda

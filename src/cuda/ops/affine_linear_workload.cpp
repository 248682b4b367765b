#include "cuda/ops/affine_linear_workload.h"

#include <algorithm>

#include "cuda/backend/random_fill.h"

namespace hone::cuda {

namespace {

size_t elements(int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

size_t q_words(const QmvAffineProblem &p) { return elements(p.n, p.k) * p.bits / 32; }
size_t group_params(const QmvAffineProblem &p) { return elements(p.n, p.k / p.group); }

} // namespace

AffineLinearWorkload::AffineLinearWorkload(CudaBackend &backend, const QmvAffineProblem &problem,
                                           int64_t out_cols)
    : CudaWorkloadOf(backend, problem.rows, out_cols > 0 ? out_cols : problem.n,
                     kAffineLinearRelativeL2Bound),
      p_(problem) {}

size_t AffineLinearWorkload::weight_bytes() const {
  return q_words(p_) * sizeof(uint32_t) + 2 * group_params(p_) * sizeof(uint16_t);
}

size_t AffineLinearWorkload::bytes_per_launch() const {
  return weight_bytes() +
         (elements(p_.rows, p_.k) + elements(p_.rows, output_cols())) * sizeof(uint16_t);
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
  return sampled_rows(p_.rows, reference_row_count());
}

std::vector<double> AffineLinearWorkload::reference() const {
  const std::vector<int64_t> rows = reference_rows();
  QmvAffineProblem p = p_;
  if (!rows.empty())
    p.rows = static_cast<int>(rows.size());
  return qmv_affine_reference(download_rows<uint16_t>(x(0), p_.rows, p_.k, rows, stream()),
                              download_q(0), download_scales(0), download_biases(0), p);
}

} // namespace hone::cuda

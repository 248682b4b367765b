// The workload a peer factory was handed, as the op's own workload type.
//
//   auto &qmv = workload_as<QmvAffineWorkload>(workload, "cublas.dequant", "qmv.affine (cuda)");
#pragma once

#include <string>

#include "hone/error.h"
#include "hone/op.h"

namespace hone::cuda {

// Throws Error(invalid_argument) naming the peer and the op it needs when `workload` is of
// another op.
template <class W> W &workload_as(Workload &workload, const char *peer, const char *op) {
  auto *w = dynamic_cast<W *>(&workload);
  if (!w)
    HONE_INVALID_ARGUMENT(std::string("peer '") + peer + "' needs a " + op + " workload");
  return *w;
}

} // namespace hone::cuda

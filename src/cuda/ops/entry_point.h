// What every public CUDA entry point (hone::ops::cuda::*) shares: the op instance it
// dispatches on, the argument checks that must run before a launch (a misaligned vector load
// is a sticky device fault that loses the context), and the launch verdict.
//
//   const Resolution &r = d.resolve(entry_op<QmvAffineOp>(), shape);
//   require_aligned("qmv.affine", {{"x", x}, {"q", q}});
//   check_launch("qmv.affine", r, qmv_affine_launch(config, args, stream));
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/dispatcher.h"

namespace hone::cuda {

// The entry points' own instance of `Op`: same name and version as the registry's, so both
// share cache entries; the dispatcher memoises per instance.
template <class Op> const Op &entry_op() {
  static const Op op;
  return op;
}

// Throws Error(invalid_argument) naming the op, the argument and its address when one of
// `pointers` (name, address) is null or not `alignment`-byte aligned.
void require_aligned(std::string_view op,
                     std::initializer_list<std::pair<std::string_view, const void *>> pointers,
                     size_t alignment = 16);

// Throws Error(runtime) naming the op and the resolved tactic when `status` is not ok.
void check_launch(std::string_view op, const Resolution &resolution, LaunchStatus status);

} // namespace hone::cuda

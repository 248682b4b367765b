// The register pipeline of the GEMV family's mma kernels (gemv.bf16, qmv.affine): the next J
// chunks' fragments requested while the current J are multiplied. Device code, included by the
// ops' kernel headers; host code too, so that tests/unit/cuda_register_pipeline_test.cpp walks
// the same functions on the CPU.
#pragma once

#include <type_traits>

#if defined(__CUDACC__)
#define HONE_PIPELINE_FN __host__ __device__ __forceinline__
#define HONE_PIPELINE_UNROLL _Pragma("unroll")
#else
#define HONE_PIPELINE_FN inline
#define HONE_PIPELINE_UNROLL
#endif

namespace hone::cuda::kernel_detail {

// Requests the J chunks from c0 into f: through one call of a block loader (load(c0, f)),
// else chunk by chunk (load(chunk, fragment)).
template <int J, class Fragment, class Load>
HONE_PIPELINE_FN void load_pipeline_block(Load &load, int c0, Fragment (&f)[J]) {
  if constexpr (std::is_invocable_v<Load, int, Fragment(&)[J]>) {
    load(c0, f);
  } else {
    HONE_PIPELINE_UNROLL
    for (int j = 0; j < J; ++j)
      load(c0 + j, f[j]);
  }
}

// The register pipeline of the GEMV family's mma kernels: chunks [c, end) J at a time, the next J
// requested (load(chunk, fragment)) while the current J, already in `fa`, are multiplied
// (multiply(chunk, fragment)). Returns the first chunk not taken (fewer than J are left). A load
// that takes (first chunk, fragments[J]) is called once a block of J, so that it can read what
// the J chunks share in one access (qmv.affine's parameter vectors).
// PING_PONG: the fragments alternate between `fa` and a second set instead of being copied from
// one to the other every J chunks: 7-10 % of qmv.affine's per-weight one-tile main loops (the
// copies, IMAD.MOV: 50 of 814 in <4, 1, 2, 2>), and with 32-bit offsets 32-47 % of gemv.bf16's.
// Where nvcc then interleaves the two halves into more registers or spills (qmv.affine's
// factored, 8-bit and multi-tile kernels), the kernel copies. The chunks, and so the bits, are
// the same either way.
// REQUIRES: fa holds chunks c .. c + J - 1 where c + J <= end.
template <int J, bool PING_PONG, class Fragment, class Load, class Multiply>
HONE_PIPELINE_FN int register_pipeline(int c, int end, Fragment (&fa)[J], Load load,
                                       Multiply multiply) {
  // Multiplies the J chunks from c0 held in `cur` after requesting the next J into `next` where
  // they exist; false where the chunks end with these.
  auto step = [&](int c0, Fragment(&cur)[J], Fragment(&next)[J]) {
    const bool more = c0 + 2 * J <= end;
    if (more)
      load_pipeline_block<J>(load, c0 + J, next);
    HONE_PIPELINE_UNROLL
    for (int j = 0; j < J; ++j)
      multiply(c0 + j, cur[j]);
    return more;
  };
  if constexpr (PING_PONG) {
    if (c + J > end)
      return c;
    Fragment fb[J];
    auto half = [&](Fragment(&cur)[J], Fragment(&next)[J]) {
      const bool more = step(c, cur, next);
      c += J;
      return more;
    };
    while (half(fa, fb) && half(fb, fa)) {
    }
  } else {
    for (; c + J <= end; c += J) {
      Fragment fb[J];
      step(c, fa, fb);
      HONE_PIPELINE_UNROLL
      for (int j = 0; j < J; ++j)
        fa[j] = fb[j];
    }
  }
  return c;
}

// The register pipeline DEPTH (2 or 3) blocks deep: block i + DEPTH is requested while block i
// is multiplied, so a warp has up to DEPTH J chunks' loads in flight where register_pipeline has
// J. The DEPTH + 1 fragment sets rotate by unrolling (block i lives in set i mod (DEPTH + 1)),
// never by copying: a copy of a set whose loads are still in flight would wait for them, and the
// depth would be one block again. DEPTH - 1 sets (J fragments each) more registers than
// register_pipeline; same chunks, same order, so the same bits. `load` is called once a block,
// in order, from block c + J.
// REQUIRES: fa holds chunks c .. c + J - 1 where c + J <= end.
template <int J, int DEPTH = 2, class Fragment, class Load, class Multiply>
HONE_PIPELINE_FN int register_pipeline_deep(int c, int end, Fragment (&fa)[J], Load load,
                                            Multiply multiply) {
  static_assert(DEPTH == 2 || DEPTH == 3, "two or three blocks ahead");
  if (c + J > end)
    return c;
  Fragment fb[J], fc[J], fd[J]; // fd: DEPTH 3 only
  if (c + 2 * J <= end)
    load_pipeline_block<J>(load, c + J, fb);
  if constexpr (DEPTH == 3) {
    if (c + 3 * J <= end)
      load_pipeline_block<J>(load, c + 2 * J, fc);
  }
  // Block i from `cur`, block i + DEPTH requested into `ahead` (the set block i - 1 used); true
  // while block i + 1 was requested, that is, is whole.
  auto step = [&](Fragment(&cur)[J], Fragment(&ahead)[J]) {
    if (c + (DEPTH + 1) * J <= end)
      load_pipeline_block<J>(load, c + DEPTH * J, ahead);
    HONE_PIPELINE_UNROLL
    for (int j = 0; j < J; ++j)
      multiply(c + j, cur[j]);
    c += J;
    return c + J <= end;
  };
  if constexpr (DEPTH == 2) {
    while (step(fa, fc) && step(fb, fa) && step(fc, fb)) {
    }
  } else {
    while (step(fa, fd) && step(fb, fa) && step(fc, fb) && step(fd, fc)) {
    }
  }
  return c;
}

} // namespace hone::cuda::kernel_detail

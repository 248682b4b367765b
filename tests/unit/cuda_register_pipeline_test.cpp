// The register pipelines of the GEMV family's mma kernels
// (src/cuda/kernels/common/register_pipeline.cuh), no device: walked on the CPU with fragments
// that carry the chunk they were loaded with. Every chunk of [c, end) that fills a whole block is
// multiplied once, in order, from the fragment that was loaded with it; every block after the
// first is requested once, in order, and none past `end`; and when a block is multiplied the
// pipeline has requested the blocks up to its depth ahead of it (one for register_pipeline, DEPTH
// for register_pipeline_deep), which is what the kernels rely on to keep loads in flight.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/common/register_pipeline.cuh"

namespace hone::cuda::kernel_detail {
namespace {

struct Fragment {
  int chunk = -1;
};

// What a pipeline did, in order: loads (the first chunk of each requested block) and multiplies
// (the chunk, the chunk its fragment held, and how many blocks had been requested by then).
struct Trace {
  std::vector<int> loads;
  struct Multiply {
    int chunk, held, requested;
  };
  std::vector<Multiply> multiplies;
};

enum class Loader { block, chunk };

// Runs a pipeline over [c, end) in blocks of J, the first block loaded by the caller as the
// kernels do; returns the chunk it stopped at.
template <int J, class Run> int walk(int c, int end, Loader loader, Trace &trace, Run run) {
  Fragment fa[J];
  for (int j = 0; j < J; ++j)
    fa[j].chunk = c + j;
  auto multiply = [&](int chunk, Fragment &f) {
    trace.multiplies.push_back({chunk, f.chunk, static_cast<int>(trace.loads.size())});
  };
  if (loader == Loader::block) {
    auto load = [&](int c0, Fragment(&f)[J]) {
      trace.loads.push_back(c0);
      for (int j = 0; j < J; ++j)
        f[j].chunk = c0 + j;
    };
    return run(c, end, fa, load, multiply);
  }
  auto load = [&](int chunk, Fragment &f) {
    if ((chunk - c) % J == 0)
      trace.loads.push_back(chunk);
    f.chunk = chunk;
  };
  return run(c, end, fa, load, multiply);
}

// The checks of the file comment, for a pipeline that keeps `depth` blocks requested ahead.
template <int J>
void expect_pipeline(const Trace &trace, int c, int end, int stop, int depth,
                     const std::string &where) {
  const int blocks = (end - c) / J;
  EXPECT_EQ(stop, c + blocks * J) << where;
  // Multiplies: chunks c .. stop - 1 in order, each from its own fragment.
  ASSERT_EQ(static_cast<int>(trace.multiplies.size()), blocks * J) << where;
  for (int i = 0; i < blocks * J; ++i) {
    EXPECT_EQ(trace.multiplies[i].chunk, c + i) << where << " multiply " << i;
    EXPECT_EQ(trace.multiplies[i].held, c + i) << where << " multiply " << i;
  }
  // Loads: blocks 1 .. blocks - 1, in order, once each (block 0 is the caller's).
  std::vector<int> expected;
  for (int b = 1; b < blocks; ++b)
    expected.push_back(c + b * J);
  EXPECT_EQ(trace.loads, expected) << where;
  // Depth: when block b is multiplied, blocks up to b + depth (where they exist) were requested.
  for (int b = 0; b < blocks; ++b) {
    const int requested = trace.multiplies[b * J].requested; // blocks 1 .. requested
    EXPECT_EQ(requested, std::min(b + depth, blocks - 1)) << where << " block " << b;
  }
}

// Every loader form, two first chunks and every end up to 13 blocks on (a partial block after the
// last whole one included).
template <int J, class Run> void check_all(const std::string &name, int depth, Run run) {
  for (Loader loader : {Loader::block, Loader::chunk})
    for (int c : {0, 3})
      for (int end = c + J; end <= c + 13 * J + J - 1; ++end) {
        Trace trace;
        const int stop = walk<J>(c, end, loader, trace, run);
        expect_pipeline<J>(trace, c, end, stop, depth,
                           name + " c " + std::to_string(c) + " end " + std::to_string(end) +
                               (loader == Loader::block ? " (block loader)" : " (chunk loader)"));
      }
}

template <int J, bool PING_PONG> void check_register_pipeline() {
  check_all<J>("register_pipeline<" + std::to_string(J) + ", " + std::to_string(PING_PONG) + ">", 1,
               [](int c, int end, auto &fa, auto load, auto mul) {
                 return register_pipeline<J, PING_PONG>(c, end, fa, load, mul);
               });
}

template <int J, int DEPTH> void check_register_pipeline_deep() {
  check_all<J>("register_pipeline_deep<" + std::to_string(J) + ", " + std::to_string(DEPTH) + ">",
               DEPTH, [](int c, int end, auto &fa, auto load, auto mul) {
                 return register_pipeline_deep<J, DEPTH>(c, end, fa, load, mul);
               });
}

TEST(CudaRegisterPipelineTest, OneBlockAheadMultipliesEveryWholeBlockOnceInOrder) {
  check_register_pipeline<1, false>();
  check_register_pipeline<2, false>();
  check_register_pipeline<4, false>();
  check_register_pipeline<1, true>();
  check_register_pipeline<2, true>();
  check_register_pipeline<4, true>();
}

TEST(CudaRegisterPipelineTest, TwoAndThreeBlocksAheadKeepTheirDepthAndTheOrder) {
  check_register_pipeline_deep<1, 2>();
  check_register_pipeline_deep<2, 2>();
  check_register_pipeline_deep<4, 2>();
  check_register_pipeline_deep<1, 3>();
  check_register_pipeline_deep<2, 3>();
  check_register_pipeline_deep<4, 3>();
}

// A pipeline handed fewer chunks than a block multiplies nothing and loads nothing.
TEST(CudaRegisterPipelineTest, FewerChunksThanABlockAreLeftToTheCaller) {
  Trace trace;
  const int stop =
      walk<4>(8, 11, Loader::block, trace, [](int c0, int e, auto &fa, auto load, auto mul) {
        return register_pipeline_deep<4, 3>(c0, e, fa, load, mul);
      });
  EXPECT_EQ(stop, 8);
  EXPECT_TRUE(trace.loads.empty());
  EXPECT_TRUE(trace.multiplies.empty());
}

} // namespace
} // namespace hone::cuda::kernel_detail

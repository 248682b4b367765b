// The split-K epilogue's float4 items (src/cuda/kernels/common/mma_fragment.h) against the
// per-output offsets reduce_and_store reads: every output of a CTA is one accumulator of one item,
// and that item's accumulator is where mma_partial_offset puts the output. No device.
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include "cuda/kernels/common/mma_fragment.h"

namespace hone::cuda::kernel_detail {
namespace {

template <int MT, int NT> void check_every_output(int warps_n) {
  constexpr int kFloatsPerWarp = MT * NT * 128;
  const int items = warps_n * MT * NT * 32;
  std::set<std::pair<int, int>> seen;
  for (int f = 0; f < items; ++f)
    for (int i = 0; i < 4; ++i) {
      const FragmentPlace at = mma_item_place<MT, NT>(f, i);
      ASSERT_GE(at.m_local, 0);
      ASSERT_LT(at.m_local, warps_n * MT * 16) << "MT " << MT << " NT " << NT << " item " << f;
      ASSERT_GE(at.r_local, 0);
      ASSERT_LT(at.r_local, NT * 8) << "MT " << MT << " NT " << NT << " item " << f;
      // reduce_and_store's float offset of the same output, in the slice's partial.
      const int offset = (at.m_local / (MT * 16)) * kFloatsPerWarp +
                         mma_partial_offset<NT>(at.m_local % (MT * 16), at.r_local);
      EXPECT_EQ(offset, 4 * f + i) << "MT " << MT << " NT " << NT << " warps_n " << warps_n
                                   << " item " << f << " accumulator " << i;
      seen.insert({at.m_local, at.r_local});
    }
  EXPECT_EQ(seen.size(), static_cast<size_t>(warps_n * MT * 16 * NT * 8))
      << "MT " << MT << " NT " << NT << ": an output missed or met twice";
}

TEST(MmaFragment, EveryOutputIsOneItemAccumulatorWhereTheOffsetsPutIt) {
  // The shapes of the qmm.affine mma path (MT 1-2, NT 2-8) and the register-A wgmma path
  // (MT 1, NT = TM / 8 up to 16), over one to eight warps along N.
  for (int warps_n : {1, 2, 4, 8}) {
    check_every_output<1, 2>(warps_n);
    check_every_output<1, 8>(warps_n);
    check_every_output<1, 16>(warps_n);
    check_every_output<2, 4>(warps_n);
    check_every_output<2, 8>(warps_n);
  }
}

} // namespace
} // namespace hone::cuda::kernel_detail

// The stream-K partition (src/cuda/kernels/common/stream_k.h), no device: walked CTA by CTA as
// qmm.affine's TMA engine walks it, every (tile, K block) unit is run once, every tile is stored
// once, its segments add up to K blocks 0 .. blocks - 1 in order, each CTA hands over at most one
// partial, and no CTA waits on a CTA that is waiting.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/common/stream_k.h"

namespace hone::cuda {
namespace {

struct Segment {
  int cta, tile, first_kb, last_kb;
  StreamK::Role role;
  bool first_of_cta, last_of_cta;
};

// The segments of every CTA, found as the kernel finds them: a segment starts at a CTA's first
// unit or at K block 0 and ends where StreamK::ends_segment says.
std::vector<Segment> walk(const StreamK &sk) {
  std::vector<Segment> out;
  for (int c = 0; c < sk.ctas; ++c) {
    const int u0 = sk.begin(c), count = sk.begin(c + 1) - u0;
    int first_kb = 0;
    bool first = true;
    for (int i = 0; i < count; ++i) {
      const int u = u0 + i, kb = u % sk.blocks;
      if (i == 0 || kb == 0)
        first_kb = kb;
      if (sk.ends_segment(u, i, count)) {
        out.push_back(
            {c, u / sk.blocks, first_kb, kb, sk.role(first_kb, kb), first, i == count - 1});
        first = false;
      }
    }
  }
  return out;
}

void check(int tiles, int blocks, int ctas) {
  const StreamK sk{tiles * blocks, blocks, ctas};
  const std::string where = "tiles=" + std::to_string(tiles) + " blocks=" + std::to_string(blocks) +
                            " ctas=" + std::to_string(ctas);
  ASSERT_EQ(sk.begin(0), 0) << where;
  ASSERT_EQ(sk.begin(ctas), sk.units) << where;
  for (int c = 0; c < ctas; ++c) {
    const int count = sk.begin(c + 1) - sk.begin(c);
    EXPECT_GE(count, sk.units / ctas) << where << " cta " << c;
    EXPECT_LE(count, sk.units / ctas + 1) << where << " cta " << c;
  }
  const std::vector<Segment> segments = walk(sk);
  std::map<int, std::vector<Segment>> by_tile;
  std::map<int, int> writers_of_cta;
  for (const Segment &s : segments) {
    by_tile[s.tile].push_back(s);
    if (s.role == StreamK::Role::writer) {
      EXPECT_TRUE(s.first_of_cta) << where << ": a writer segment not first in CTA " << s.cta;
      ++writers_of_cta[s.cta];
    }
    if (s.role == StreamK::Role::reader) {
      EXPECT_TRUE(s.last_of_cta) << where << ": a reader segment not last in CTA " << s.cta;
    }
  }
  for (const auto &[cta, n] : writers_of_cta)
    EXPECT_EQ(n, 1) << where << ": CTA " << cta << " would need " << n << " partial slots";
  ASSERT_EQ(static_cast<int>(by_tile.size()), tiles) << where;
  for (const auto &[tile, list] : by_tile) {
    // The CTA that stores the tile: its one whole or reader segment, which starts at K block 0.
    int stores = 0;
    const Segment *owner = nullptr;
    for (const Segment &s : list)
      if (s.role != StreamK::Role::writer) {
        ++stores;
        owner = &s;
      }
    ASSERT_EQ(stores, 1) << where << " tile " << tile;
    EXPECT_EQ(owner->first_kb, 0) << where << " tile " << tile;
    // What the reader adds, in order: its own blocks, then each writer's, contiguous up to the
    // tile's last block.
    int next_kb = owner->last_kb + 1;
    int added = 1;
    if (owner->role == StreamK::Role::reader) {
      EXPECT_GE(sk.next_writer(tile, owner->cta), 0) << where << " tile " << tile;
      for (int w = sk.next_writer(tile, owner->cta); w >= 0; w = sk.next_writer(tile, w)) {
        const Segment *seg = nullptr;
        for (const Segment &s : list)
          if (s.cta == w)
            seg = &s;
        ASSERT_NE(seg, nullptr) << where << ": CTA " << w << " holds no part of tile " << tile;
        EXPECT_EQ(seg->role, StreamK::Role::writer) << where << " tile " << tile;
        EXPECT_EQ(seg->first_kb, next_kb) << where << " tile " << tile << " writer " << w;
        next_kb = seg->last_kb + 1;
        ++added;
      }
    } else {
      EXPECT_EQ(owner->last_kb, blocks - 1) << where << " tile " << tile;
    }
    EXPECT_EQ(next_kb, blocks) << where << " tile " << tile << ": K blocks left out";
    EXPECT_EQ(added, static_cast<int>(list.size()))
        << where << " tile " << tile << ": a segment no one adds";
  }
}

TEST(StreamKPartition, EveryUnitOnceEveryTileStoredOnceInKOrder) {
  // The 64 x 256 tile on 28672 x 4096 (112 tiles, 16 blocks) over 132 SMs; 4096-row shapes with
  // few tiles and many blocks (a tile over many CTAs); a CTA over many tiles; one unit each.
  for (const auto &[tiles, blocks, ctas] : std::vector<std::tuple<int, int, int>>{{112, 16, 132},
                                                                                  {16, 56, 132},
                                                                                  {64, 16, 132},
                                                                                  {16, 16, 264},
                                                                                  {300, 4, 132},
                                                                                  {112, 16, 112},
                                                                                  {7, 3, 21},
                                                                                  {1, 2, 2},
                                                                                  {5, 1, 3},
                                                                                  {24, 6, 24},
                                                                                  {33, 7, 100}})
    check(tiles, blocks, ctas);
  for (int tiles = 1; tiles <= 12; ++tiles)
    for (int blocks = 1; blocks <= 9; ++blocks)
      for (int ctas = 1; ctas <= tiles * blocks; ++ctas)
        check(tiles, blocks, ctas);
}

TEST(StreamKPartition, RolesOfASegment) {
  const StreamK sk{32, 8, 5};
  EXPECT_EQ(sk.role(0, 7), StreamK::Role::whole);
  EXPECT_EQ(sk.role(0, 3), StreamK::Role::reader);
  EXPECT_EQ(sk.role(3, 7), StreamK::Role::writer);
  EXPECT_EQ(sk.role(2, 5), StreamK::Role::writer);
}

} // namespace
} // namespace hone::cuda

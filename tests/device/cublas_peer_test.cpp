// The cuBLASLt peer of gemv.bf16 computes the same Y on the workload's own buffers.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/gate/bf16_compare.h"
#include "cuda/peers/cublas_gemv_bf16_peer.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/ops/gemv_bf16_reference.h"
#include "device_test.h"
#include "hone/error.h"
#include "hone/registry.h"
#include "op_test_helpers.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;
using testing::ForeignWorkload;
using testing::reduced_shapes;
using testing::registered_op;

class CublasPeerTest : public DeviceTest {};

const TunableOp &gemv_op() { return registered_op("gemv.bf16"); }

TEST(CublasPeerRegistryTest, PeerIsFindableThroughTheRegistry) {
  const TunableOp &op = gemv_op();
  EXPECT_NE(Registry::global().find_peer(op, "cublas"), nullptr);
  const std::vector<std::string> peers = Registry::global().peers(op);
  EXPECT_NE(std::find(peers.begin(), peers.end(), "cublas"), peers.end());
}

TEST_F(CublasPeerTest, MatchesTheReferenceOnEveryRotationCopy) {
  const TunableOp &op = gemv_op();
  const PeerFactory &factory = *Registry::global().find_peer(op, "cublas");
  struct Case {
    int n, k;
  };
  const std::vector<Case> cases =
      reduced_shapes() ? std::vector<Case>{{512, 1024}}
                       : std::vector<Case>{{4096, 4096}, {14336, 4096}, {1536, 8960}, {1000, 4104}};
  for (Case c : cases) {
    for (int rows : {1, 3, 8, 32}) {
      std::unique_ptr<Workload> w = op.prepare(Shape{{rows, c.n, c.k}, DType::bf16});
      auto &gw = dynamic_cast<GemvBf16Workload &>(*w);
      gw.set_rotation(2);
      std::unique_ptr<Peer> peer = factory(*w);
      EXPECT_EQ(peer->name(), "cublas");
      gw.randomize_inputs(); // copy 0 fresh; copy 1 keeps its own data
      for (int copy : {0, 1}) {
        gw.poison_output();
        peer->run(copy);
        HONE_CUDA_CHECK(cudaStreamSynchronize(gw.stream()));
        const std::vector<double> ref =
            gemv_bf16_reference(gw.download_x(copy), gw.download_w(copy), rows, c.n, c.k);
        const Bf16Comparison cmp = compare_bf16(gw.download_y(), ref);
        EXPECT_EQ(cmp.nan_count, 0u) << "rows=" << rows << " n=" << c.n << " k=" << c.k;
        EXPECT_LE(cmp.relative_l2, kGemvBf16RelativeL2Bound)
            << "rows=" << rows << " n=" << c.n << " k=" << c.k << " copy=" << copy;
      }
    }
  }
}

TEST(CublasPeerRegistryTest, RejectsAWorkloadOfAnotherOp) {
  ForeignWorkload foreign;
  try {
    make_cublas_gemv_bf16_peer(foreign);
    FAIL() << "expected invalid_argument";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
}

} // namespace
} // namespace hone::cuda

// qmm.affine (cuda): every compiled tactic against the float64 reference on fresh random
// quantized weights at M = 1 .. 2048 (8192 on one shape), the linear shapes of Llama-3.1-8B and
// Qwen2.5-1.5B at bits 4 and 8 and every group, a gate that fails on wrong weights and on an
// unwritten row, the spill rule, validation and tile-override messages, the public entry
// point, the cublas.dequant peer, and the tuner end to end (tune, cache, reload).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/gate/bf16_compare.h"
#include "cuda/kernels/qmm_affine/qmm_affine.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"
#include "cuda/ops/qmm_affine_op.h"
#include "cuda/ops/qmv_affine_reference.h"
#include "cuda/peers/cublas_dequant_affine_linear_peer.h"
#include "device_test.h"
#include "hone/cache.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/ops/cuda.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/tune.h"
#include "op_test_helpers.h"

namespace hone::cuda {
namespace {

using testing::CacheDirTest;
using testing::DeviceTest;
using testing::expect_invalid;
using testing::expect_spill_rule;
using testing::ForeignWorkload;
using testing::reduced_shapes;

// One quantized weight matrix: N x K in `bits`-bit groups of `group` along K.
struct Format {
  int n, k, bits, group;
};

std::string describe(const Format &f) {
  return "n=" + std::to_string(f.n) + " k=" + std::to_string(f.k) +
         " bits=" + std::to_string(f.bits) + " group=" + std::to_string(f.group);
}

Shape shape_of(int rows, const Format &f) {
  return Shape{{rows, f.n, f.k, f.bits, f.group}, DType::bf16};
}

// (N, K) of the linear layers: Llama-3.1-8B (q/k/v fused, o, gate/up as one 14336-row half,
// down) and Qwen2.5-1.5B (q/k/v fused 1536 + 2 x 256, o, gate/up fused 2 x 8960, down).
struct Linear {
  int n, k;
  const char *name;
};
constexpr Linear kLlama8b[] = {{6144, 4096, "llama qkv"},
                               {4096, 4096, "llama o"},
                               {28672, 4096, "llama gate_up"},
                               {4096, 14336, "llama down"}};
constexpr Linear kQwen15b[] = {{2048, 1536, "qwen qkv"},
                               {1536, 1536, "qwen o"},
                               {17920, 1536, "qwen gate_up"},
                               {1536, 8960, "qwen down"}};

// The M values of the acceptance matrix (8192 runs on one shape, in its own test).
std::vector<int> matrix_m() {
  return reduced_shapes() ? std::vector<int>{1, 100}
                          : std::vector<int>{1, 7, 16, 33, 64, 100, 512, 2048};
}

const TunableOp &qmm_op() { return testing::registered_op("qmm.affine"); }

// Every compiled config of `bits` that can run `f` at `m`, checked in tolerance mode; returns
// how many ran. Configs the workload refuses (tile K and group, spills) are counted apart.
int check_every_config(const Format &f, int m) {
  std::unique_ptr<Workload> w = qmm_op().prepare(shape_of(m, f));
  int ran = 0;
  for (const QmmAffineConfig &c : qmm_affine_configs(f.bits)) {
    const Tactic t = c.to_tactic();
    std::string reason;
    if (const Status s = w->can_run(t, &reason); s != Status::ok) {
      EXPECT_NE(s, Status::rejected) << t.str() << " spills: " << reason;
      // The one expected refusal: a wgmma tile K that does not divide the group.
      EXPECT_TRUE(c.path == 0 && f.group % c.tile_k != 0) << t.str() << " refused: " << reason;
      continue;
    }
    const CheckResult r = w->check(t, Numerics::tolerance);
    EXPECT_TRUE(r.pass()) << describe(f) << " m=" << m << " " << t.str() << ": "
                          << to_string(r.status) << ": " << r.reason;
    EXPECT_LE(r.error, kAffineLinearRelativeL2Bound) << t.str();
    ++ran;
  }
  return ran;
}

// Launch arguments over copy 0 of a prepared workload's int4 operands, into y, with `workspace`
// of `workspace_bytes`.
QmmAffineArgs int4_args(QmmAffineWorkload &qw, int m, const Format &f, void *y, void *workspace,
                        size_t workspace_bytes) {
  QmmAffineArgs a;
  a.x = qw.x(0);
  a.q = qw.q(0);
  a.scales = qw.scales(0);
  a.biases = qw.biases(0);
  a.y = y;
  a.m = m;
  a.n = f.n;
  a.k = f.k;
  a.bits = 4;
  a.group = f.group;
  a.workspace = workspace;
  a.workspace_bytes = workspace_bytes;
  return a;
}

// Outputs that differ between two downloads of y (a count, not the vectors: they are 10^5
// values); a length mismatch counts as the longer length.
size_t differing(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b) {
  size_t count = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    count += a[i] != b[i];
  return count;
}

// Calls fn(qw, m, config, name) for every int4 config that `wanted` selects and that can run f at
// m, for each m of `ms`, over one prepared workload per m. It stops at the first fatal failure,
// as an ASSERT in the caller's own loop would.
template <class Wanted, class Fn>
void for_each_int4_config(const Format &f, std::initializer_list<int> ms, Wanted wanted, Fn fn) {
  for (int m : ms) {
    std::unique_ptr<Workload> w = qmm_op().prepare(shape_of(m, f));
    auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
    for (const QmmAffineConfig &c : qmm_affine_configs(4)) {
      if (!wanted(c))
        continue;
      if (std::string why; !qmm_affine_can_implement(c, m, f.n, f.k, 4, f.group, &why))
        continue;
      fn(qw, m, c, c.to_tactic().str() + " m=" + std::to_string(m));
      if (::testing::Test::HasFatalFailure())
        return;
    }
  }
}

class QmmAffineOpTest : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (!IsSkipped() && !qmm_affine_built())
      GTEST_SKIP() << "this build has no qmm.affine kernels";
  }
};

class QmmAffineHostTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!qmm_affine_built())
      GTEST_SKIP() << "this build has no qmm.affine kernels (no CUTLASS headers)";
  }
};

// --- host -----------------------------------------------------------------------------------

TEST_F(QmmAffineHostTest, OpIdentityAndBuckets) {
  const TunableOp &op = qmm_op();
  EXPECT_EQ(op.name(), "qmm.affine");
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.version(), 1);
  EXPECT_EQ(op.default_numerics(), Numerics::tolerance);
  const BucketSpec &spec = op.buckets();
  const Format f{4096, 4096, 4, 64};
  for (int m = 1; m <= 32; ++m)
    EXPECT_EQ(spec.map(shape_of(m, f)).value()[0], m);
  // Past 32 rows up to the next power of two: a tile chosen for 64 rows covers 33..64.
  EXPECT_EQ(spec.map(shape_of(33, f)).value()[0], 64);
  EXPECT_EQ(spec.map(shape_of(64, f)).value()[0], 64);
  EXPECT_EQ(spec.map(shape_of(65, f)).value()[0], 128);
  EXPECT_EQ(spec.map(shape_of(100, f)).value()[0], 128);
  EXPECT_EQ(spec.map(shape_of(2048, f)).value()[0], 2048);
  EXPECT_EQ(spec.map(shape_of(16384, f)).value()[0], 16384);
  EXPECT_FALSE(spec.map(shape_of(16385, f)).has_value());
  EXPECT_EQ(spec.describe(spec.map(shape_of(700, f)).value()),
            "rows=1024,n=4096,k=4096,bits=4,group=64");
}

TEST_F(QmmAffineHostTest, TacticsRoundTripAndAreParseable) {
  for (int bits : {4, 8})
    for (const QmmAffineConfig &c : qmm_affine_configs(bits)) {
      const Tactic t = c.to_tactic();
      EXPECT_EQ(t.kernel, c.path == 0                       ? "qmm.affine.wgmma"
                          : c.path == 1                     ? "qmm.affine.dequant"
                          : c.engine == kQmmEngineWgmma     ? "qmm.affine.mma_wgmma"
                          : c.engine == kQmmEngineTma       ? "qmm.affine.mma_tma"
                          : c.engine == kQmmEngineTmaAhead  ? "qmm.affine.mma_tma_ahead"
                          : c.engine == kQmmEngineWgmmaLate ? "qmm.affine.mma_wgmma_late"
                                                            : "qmm.affine.mma");
      EXPECT_TRUE(c.engine == 0 || c.path == kQmmMmaPath) << t.str();
      EXPECT_TRUE(c.path != kQmmMmaPath || bits == 4) << t.str();
      EXPECT_EQ(QmmAffineConfig::from_tactic(Tactic::parse(t.str())), c) << t.str();
      EXPECT_EQ(t.str().find("stream_k") != std::string::npos, c.stream_k != 0) << t.str();
      EXPECT_TRUE(c.pingpong == 0 || (c.split_k == 1 && c.stream_k == 0)) << t.str();
      EXPECT_EQ(qmm_op().compile(t).as<QmmAffineConfig>(), c);
    }
  EXPECT_EQ(QmmAffineConfig{}.to_tactic().str(),
            "qmm.affine.wgmma:tile_m=128,tile_n=128,tile_k=64,cluster_m=1,cluster_n=1,"
            "pingpong=0,split_k=1");
  EXPECT_THROW(QmmAffineConfig::from_tactic(Tactic::parse("qmv.affine.mma:rows_per_cta=8")), Error);
}

TEST_F(QmmAffineHostTest, CompileRefusesATacticNotCompiledNamingTheTiles) {
  QmmAffineConfig odd;
  odd.tile_m = 48;
  try {
    qmm_op().compile(odd.to_tactic());
    FAIL() << "expected invalid_argument";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    const std::string text = e.what();
    EXPECT_NE(text.find("not compiled"), std::string::npos) << text;
    EXPECT_NE(text.find(qmm_affine_tile_list(4)), std::string::npos) << text;
  }
}

// The mma path: its spelling parses, and the shapes it cannot take are refused with the value.
TEST_F(QmmAffineHostTest, MmaPathParsesAndNamesTheShapesItRefuses) {
  const QmmAffineConfig c = QmmAffineConfig::from_tactic(
      Tactic::parse("qmm.affine.mma:tile_m=16,tile_n=64,tile_k=64,stages=3,warps=4,split_k=2"));
  EXPECT_EQ(c.path, 2);
  EXPECT_EQ(c.tile_m, 16);
  EXPECT_EQ(c.tile_n, 64);
  EXPECT_EQ(c.tile_k, 64);
  EXPECT_EQ(c.stages, 3);
  EXPECT_EQ(c.warps, 4);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_THROW(QmmAffineConfig::from_tactic(
                   Tactic::parse("qmm.affine.mma:tile_m=16,tile_n=64,stages=3,split_k=2")),
               Error);
  std::string why;
  EXPECT_TRUE(qmm_affine_can_implement(c, 16, 4096, 4096, 4, 64, &why)) << why;
  const auto refused = [&](const QmmAffineConfig &config, int m, int n, int k, int bits, int group,
                           const std::string &text) {
    std::string reason;
    EXPECT_FALSE(qmm_affine_can_implement(config, m, n, k, bits, group, &reason))
        << config.to_tactic().str() << " m=" << m << " n=" << n << " k=" << k << " bits=" << bits
        << " group=" << group;
    EXPECT_NE(reason.find(text), std::string::npos) << reason;
  };
  refused(c, 16, 4096, 4096, 8, 64, "bits=8");         // int4 only: not among the int8 configs
  refused(c, 16, 4096, 1152, 4, 128, "k / group = 9"); // parameter windows need k / group even
  refused(c, 16, 4096, 1056, 4, 32, "k=1056");         // 64-deep K blocks
  QmmAffineConfig wide = c;
  wide.split_k = 4;
  EXPECT_TRUE(qmm_affine_can_implement(wide, 16, 4096, 256, 4, 64, &why)) << why;
  std::string reason;
  EXPECT_FALSE(qmm_affine_can_implement(wide, 16, 4096, 192, 4, 64, &reason)); // 3 K blocks
  EXPECT_NE(reason.find("split_k=4"), std::string::npos) << reason;
  // A 256-deep block: k a multiple of 256, and as many blocks as slices.
  const QmmAffineConfig deep = QmmAffineConfig::from_tactic(
      Tactic::parse("qmm.affine.mma:tile_m=16,tile_n=64,tile_k=256,stages=3,warps=16,split_k=4"));
  EXPECT_TRUE(qmm_affine_can_implement(deep, 16, 4096, 1024, 4, 128, &why)) << why;
  refused(deep, 16, 4096, 1152, 4, 64, "tile_k=256");
  refused(deep, 16, 4096, 768, 4, 64, "split_k=4");
  // The TMA engine: its tensor map of the group parameters needs rows of a multiple of 16 bytes.
  QmmAffineConfig tma;
  for (const QmmAffineConfig &o : qmm_affine_configs(4))
    if (o.path == kQmmMmaPath && o.engine == kQmmEngineTma && o.split_k == 1) {
      tma = o;
      break;
    }
  if (tma.engine == kQmmEngineTma) {
    EXPECT_EQ(QmmAffineConfig::from_tactic(Tactic::parse(tma.to_tactic().str())), tma);
    EXPECT_TRUE(qmm_affine_can_implement(tma, 16, 4096, 1536, 4, 64, &why)) << why;
    refused(tma, 16, 4096, 1280, 4, 64, "k / group = 20"); // 40-byte parameter rows
    refused(tma, 16, 4096, 1152, 4, 64, "tile_k=256");
    // Its stream-K form: compiled beside it, spelled with stream_k=1, at least two K blocks.
    QmmAffineConfig stream = tma;
    stream.stream_k = 1;
    EXPECT_NE(stream.to_tactic().str().find(",stream_k=1"), std::string::npos);
    EXPECT_EQ(QmmAffineConfig::from_tactic(Tactic::parse(stream.to_tactic().str())), stream);
    EXPECT_TRUE(qmm_affine_can_implement(stream, 16, 4096, 1536, 4, 64, &why)) << why;
    refused(stream, 16, 4096, 256, 4, 32, "stream_k needs at least 2 K blocks");
  }
  // On the mma path stream-K is the TMA engines' only, and never with a cluster split; every
  // TMA kernel has it but those with warpgroups along K, and every TMA kernel a twin with the
  // lookahead (engine kQmmEngineTmaAhead).
  int tma_kernels = 0, tma_streaming = 0, tma_stream = 0, tma_ahead = 0;
  for (const QmmAffineConfig &o : qmm_affine_configs(4)) {
    if (o.path != kQmmMmaPath)
      continue;
    const bool one = qmm_engine_is_tma(o.engine) && o.split_k == 1 && o.stream_k == 0;
    tma_kernels += one;
    tma_streaming += one && qmm_tma_warpgroups_k(
                                {o.tile_m, o.tile_n, o.tile_k, o.warps, o.stages, o.engine}) == 1;
    if (o.engine == kQmmEngineTmaAhead && o.split_k == 1 && o.stream_k == 0) {
      ++tma_ahead;
      QmmAffineConfig twin = o;
      twin.engine = kQmmEngineTma;
      EXPECT_NE(std::find(qmm_affine_configs(4).begin(), qmm_affine_configs(4).end(), twin),
                qmm_affine_configs(4).end())
          << o.to_tactic().str();
    }
    if (o.stream_k != 0) {
      ++tma_stream;
      EXPECT_TRUE(qmm_engine_is_tma(o.engine)) << o.to_tactic().str();
      EXPECT_EQ(o.split_k, 1) << o.to_tactic().str();
    }
  }
  EXPECT_EQ(tma_stream, tma_streaming);
  if (tma_kernels > 0) {
    EXPECT_LT(tma_streaming, tma_kernels) << "the kernels with warpgroups along K are built";
  }
  EXPECT_EQ(2 * tma_ahead, tma_kernels);
  // Every register-A kernel has its late-refill twin.
  int rs = 0, rs_late = 0;
  const std::vector<QmmMmaKernel> &kernels = qmm_mma_kernels();
  for (const QmmMmaKernel &k : kernels) {
    rs += k.engine == kQmmEngineWgmma;
    if (k.engine == kQmmEngineWgmmaLate) {
      ++rs_late;
      QmmMmaKernel twin = k;
      twin.engine = kQmmEngineWgmma;
      EXPECT_NE(std::find(kernels.begin(), kernels.end(), twin), kernels.end())
          << k.tile_m << "x" << k.tile_n << "x" << k.tile_k;
    }
  }
  EXPECT_EQ(rs_late, rs);
  QmmAffineConfig mma_stream = c;
  mma_stream.stream_k = 1;
  refused(mma_stream, 16, 4096, 4096, 4, 64, "not a compiled qmm.affine config");
}

// The mma path is a candidate from 9 to 64 rows only, at the activation tile that holds the
// rows and at most 128 weight rows per CTA (qmm_affine_op.cpp says why).
TEST_F(QmmAffineHostTest, MmaCandidatesOnlyAtNineToSixtyFourRowsAtTheFittingTile) {
  // mma.sync engine: 9-64 rows at the 16/32/64 tile that holds them; wgmma engines: 9-256 rows,
  // at 128 from 65 rows (two activation tiles above 128), and at 256 (the TMA engine's 256-row
  // tiles, where built) from 129.
  const TunableOp &op = qmm_op();
  const Format f{4096, 4096, 4, 64};
  const std::vector<QmmMmaKernel> &kernels = qmm_mma_kernels();
  const bool wgmma_built =
      qmm_affine_built() && std::any_of(kernels.begin(), kernels.end(), [](const QmmMmaKernel &k) {
        return k.engine != kQmmEngineMma;
      });
  const bool rows256_built = std::any_of(kernels.begin(), kernels.end(), [](const QmmMmaKernel &k) {
    return k.tile_m == 256 && qmm_engine_is_tma(k.engine);
  });
  for (int m : {1, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 512}) {
    const Shape b = op.buckets().map(shape_of(m, f)).value();
    const int fit = b[0] <= 16 ? 16 : b[0] <= 32 ? 32 : b[0] <= 64 ? 64 : 128;
    int mma = 0, wgmma = 0, rows128 = 0, rows256 = 0;
    for (const Tactic &t : op.candidates(b)) {
      const QmmAffineConfig c = QmmAffineConfig::from_tactic(t);
      if (c.path != kQmmMmaPath)
        continue;
      ++(c.engine != kQmmEngineMma ? wgmma : mma);
      rows128 += c.tile_m == 128;
      rows256 += c.tile_m == 256;
      if (b[0] > 128) {
        EXPECT_TRUE(c.tile_m == 128 || (c.tile_m == 256 && qmm_engine_is_tma(c.engine)))
            << "m=" << m << " " << t.str();
      } else {
        EXPECT_EQ(c.tile_m, fit) << "m=" << m << " " << t.str();
      }
      EXPECT_LE(c.tile_n, qmm_engine_is_tma(c.engine) ? 256 : 128) << "m=" << m << " " << t.str();
    }
    if (b[0] >= 9 && b[0] <= 64)
      EXPECT_GT(mma, 0) << "m=" << m;
    else
      EXPECT_EQ(mma, 0) << "m=" << m;
    if (rows256_built && b[0] > 128 && b[0] <= 256)
      EXPECT_GT(rows256, 0) << "m=" << m;
    else
      EXPECT_EQ(rows256, 0) << "m=" << m;
    if (wgmma_built && b[0] > 64 && b[0] <= 256) {
      EXPECT_GT(rows128, 0) << "m=" << m << ": the 128-row tiles stay candidates";
    }
    if (wgmma_built && b[0] >= 9 && b[0] <= 256)
      EXPECT_GT(wgmma, 0) << "m=" << m;
    else
      EXPECT_EQ(wgmma, 0) << "m=" << m;
  }
}

TEST_F(QmmAffineHostTest, CandidatesAreCompiledAdmissibleAndUniqueWithTheDefaultFirst) {
  const TunableOp &op = qmm_op();
  for (int bits : {4, 8})
    for (int group : {32, 64, 128})
      for (int m : {1, 16, 64, 512, 8192}) {
        const Format f{4096, 4096, bits, group};
        const Shape b = op.buckets().map(shape_of(m, f)).value();
        const std::vector<Tactic> c = op.candidates(b);
        ASSERT_FALSE(c.empty());
        EXPECT_EQ(c.front(), op.default_tactic(b));
        for (size_t i = 0; i < c.size(); ++i) {
          const QmmAffineConfig config = QmmAffineConfig::from_tactic(c[i]);
          std::string why;
          EXPECT_TRUE(qmm_affine_can_implement(config, m, f.n, f.k, bits, group, &why))
              << c[i].str() << ": " << why;
          for (size_t j = i + 1; j < c.size(); ++j)
            EXPECT_NE(c[i], c[j]) << "duplicate candidate " << c[i].str();
        }
      }
}

TEST_F(QmmAffineHostTest, DefaultRunsEveryModelShape) {
  for (const Linear &l : kLlama8b)
    for (const Linear &q : kQwen15b)
      for (const Linear &s : {l, q})
        for (int bits : {4, 8})
          for (int group : {32, 64, 128})
            for (int m : {1, 7, 33, 100, 512, 2048, 8192, 16384}) {
              const QmmAffineConfig c = qmm_affine_default(m, s.n, s.k, bits, group);
              std::string why;
              EXPECT_TRUE(qmm_affine_can_implement(c, m, s.n, s.k, bits, group, &why))
                  << s.name << " m=" << m << " bits=" << bits << " group=" << group << ": "
                  << c.to_tactic().str() << ": " << why;
            }
}

TEST_F(QmmAffineHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = qmm_op();
  expect_invalid(op, shape_of(64, {4096, 1000, 4, 64}), "k=1000");
  expect_invalid(op, shape_of(64, {4096, 4096 + 32, 4, 64}), "not a multiple of group=64");
  expect_invalid(op, shape_of(64, {4096, 4096, 3, 64}), "bits=3");
  expect_invalid(op, shape_of(64, {4096, 4096, 4, 16}), "group=16");
  expect_invalid(op, shape_of(0, {4096, 4096, 4, 64}), "rows=0");
  expect_invalid(op, shape_of(16385, {4096, 4096, 4, 64}), "rows=16385");
  expect_invalid(op, shape_of(64, {1001, 4096, 4, 64}), "n=1001");
  expect_invalid(op, Shape{{64, 4096, 4096, 4, 64}, DType::f32}, "f32");
  expect_invalid(op, Shape{{64, 4096, 4096}, DType::bf16}, "5 dimensions");
  EXPECT_NO_THROW(op.validate(shape_of(16384, {28672, 4096, 4, 128})));
  EXPECT_NO_THROW(op.validate(shape_of(1, {1536, 8960, 8, 32})));
}

// HONE_QMM_TILE_M/N/K pick the tile verbatim; a tile no kernel has, or one whose tile K does
// not divide the group, is an error naming the variables and the legal tiles.
TEST_F(QmmAffineHostTest, TileSettingsPickTheTileOrNameTheLegalOnes) {
  const TunableOp &op = qmm_op();
  const Format f{4096, 4096, 4, 128};
  const Shape b = op.buckets().map(shape_of(512, f)).value();
  EXPECT_FALSE(op.env_override(b, Settings{}).has_value());
  for (const QmmAffineConfig &c : qmm_affine_configs(4)) {
    Settings s;
    s.qmm_tile_m = c.tile_m;
    s.qmm_tile_n = c.tile_n;
    s.qmm_tile_k = c.tile_k;
    const std::optional<Tactic> t = op.env_override(b, s);
    ASSERT_TRUE(t.has_value());
    const QmmAffineConfig got = QmmAffineConfig::from_tactic(*t);
    EXPECT_EQ(got.tile_m, c.tile_m);
    EXPECT_EQ(got.tile_n, c.tile_n);
    EXPECT_EQ(got.tile_k, c.tile_k);
  }
  Settings bad;
  bad.qmm_tile_m = 48;
  try {
    op.env_override(b, bad);
    FAIL() << "expected invalid_argument";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    const std::string text = e.what();
    EXPECT_NE(text.find("HONE_QMM_TILE_M=48"), std::string::npos) << text;
    EXPECT_NE(text.find("compiled tiles: " + qmm_affine_tile_list(4)), std::string::npos) << text;
  }
  // A tile only the wgmma path has cannot serve group 32 when its tile K does not divide it
  // (every compiled tile K is >= 64); the dequant path can, whatever the tile.
  for (const QmmAffineConfig &c : qmm_affine_configs(4)) {
    const auto &all = qmm_affine_configs(4);
    if (c.path != 0 || std::any_of(all.begin(), all.end(), [&](const QmmAffineConfig &o) {
          return o.path == 1 && o.tile_m == c.tile_m && o.tile_n == c.tile_n &&
                 o.tile_k == c.tile_k;
        }))
      continue;
    Settings s;
    s.qmm_tile_m = c.tile_m;
    s.qmm_tile_n = c.tile_n;
    s.qmm_tile_k = c.tile_k;
    const Shape b32 = op.buckets().map(shape_of(512, {4096, 4096, 4, 32})).value();
    EXPECT_THROW(op.env_override(b32, s), Error) << c.to_tactic().str();
    break;
  }
}

TEST_F(QmmAffineHostTest, WorkspaceHoldsTheTransposedGroupParameters) {
  const QmmAffineConfig c = qmm_affine_default(512, 4096, 4096, 4, 64);
  EXPECT_GE(qmm_affine_workspace_bytes(c, 512, 4096, 4096, 4, 64),
            size_t{2} * 4096 * (4096 / 64) * sizeof(uint16_t));
}

// --- device: tolerance gate ---------------------------------------------------------------------

TEST_F(QmmAffineOpTest, EveryCompiledTacticMatchesTheReference) {
  const Format f4 = reduced_shapes() ? Format{512, 1024, 4, 128} : Format{4096, 4096, 4, 128};
  const Format f8 = reduced_shapes() ? Format{512, 1024, 8, 64} : Format{4096, 4096, 8, 64};
  for (int m : matrix_m())
    EXPECT_GT(check_every_config(f4, m), 0) << describe(f4) << " m=" << m;
  for (int m : reduced_shapes() ? std::vector<int>{33} : std::vector<int>{1, 33, 512})
    EXPECT_GT(check_every_config(f8, m), 0) << describe(f8) << " m=" << m;
  // Group 32 runs on the dequant path only; both paths at group 64 and int8.
  EXPECT_GT(check_every_config({f4.n, f4.k, 4, 32}, 100), 0);
  EXPECT_GT(check_every_config({f8.n, f8.k, 8, 32}, 7), 0);
}

// The mma path at leftovers in every dimension: n = 1000 (not a multiple of any tile N: the last
// CTA's rows past n are zero-filled and not stored), k = 1152 (18 K blocks, so split_k 4
// gives slices of unequal length; 1280 at group 128, where k / group must be even), activation
// rows that fill no tile, every group.
TEST_F(QmmAffineOpTest, MmaPathHandlesLeftoversInEveryDimension) {
  std::vector<QmmAffineConfig> mma;
  for (const QmmAffineConfig &c : qmm_affine_configs(4))
    if (c.path == kQmmMmaPath)
      mma.push_back(c);
  ASSERT_FALSE(mma.empty()) << "no mma configs compiled";
  for (int group : {32, 64, 128}) {
    // n not a multiple of any tile; K slices of unequal length; parameter windows of 16, 8 and
    // 4 bytes (k / group = 36, 40 at group 32; 18, 20 at 64; 10, 14 at 128).
    // The TMA engine's 256-deep blocks and 8-group parameter windows run on 1280 (group 32),
    // 1536 (64) and 3072 (128).
    const std::vector<int> ks = group == 128  ? std::vector<int>{1280, 1792, 3072}
                                : group == 64 ? std::vector<int>{1152, 1280, 1536}
                                              : std::vector<int>{1152, 1280};
    std::vector<int> ran(mma.size(), 0);
    for (int k : ks) {
      const Format f{1000, k, 4, group};
      for (int m : reduced_shapes() ? std::vector<int>{37} : std::vector<int>{1, 9, 37, 70}) {
        std::unique_ptr<Workload> w = qmm_op().prepare(shape_of(m, f));
        for (size_t i = 0; i < mma.size(); ++i) {
          const Tactic t = mma[i].to_tactic();
          std::string reason;
          if (w->can_run(t, &reason) != Status::ok) {
            // Only a K block deeper than 64 that does not divide k may refuse, or the TMA
            // engine where k / group is not a multiple of 8.
            if (qmm_engine_is_tma(mma[i].engine) && k % mma[i].tile_k == 0 &&
                (k / group) % 8 != 0) {
              EXPECT_NE(reason.find("k / group"), std::string::npos) << reason;
              continue;
            }
            EXPECT_NE(k % mma[i].tile_k, 0) << t.str() << ": " << reason;
            EXPECT_NE(reason.find("tile_k="), std::string::npos) << reason;
            continue;
          }
          const CheckResult r = w->check(t, Numerics::tolerance);
          EXPECT_TRUE(r.pass()) << describe(f) << " m=" << m << " " << t.str() << ": "
                                << to_string(r.status) << ": " << r.reason;
          ++ran[i];
        }
      }
    }
    for (size_t i = 0; i < mma.size(); ++i)
      EXPECT_GT(ran[i], 0) << "group " << group << ": " << mma[i].to_tactic().str() << " never ran";
  }
}

// Stream-K (the TMA engine): its CTAs hand partials over through flags in the workspace. Over a
// workspace full of bytes it never wrote, and over 20 launches back to back and 200 replays of
// one captured graph (one flag token for all), the output is bit-identical to the first launch's
// and matches the reference: a flag left raised, reset too early or read before its partial
// would break one of them. At 37, 64 and 128 rows: one activation tile or several (64-row tiles
// at 128 rows: two).
TEST_F(QmmAffineOpTest, StreamKRepeatsBitwiseOverAnyWorkspace) {
  const Format f = reduced_shapes() ? Format{1000, 1536, 4, 64} : Format{4096, 4096, 4, 64};
  int ran = 0;
  const auto stream_k = [](const QmmAffineConfig &c) {
    return c.stream_k != 0 && c.path == kQmmMmaPath;
  };
  for_each_int4_config(
      f, {37, 64, 128}, stream_k,
      [&](QmmAffineWorkload &qw, int m, const QmmAffineConfig &c, const std::string &name) {
        const cudaStream_t stream = qw.stream();
        const size_t ws = qmm_affine_workspace_bytes(c, m, f.n, f.k, 4, f.group);
        ASSERT_GT(ws, 0u) << name;
        DeviceBuffer work(ws), y(static_cast<size_t>(m) * f.n * sizeof(uint16_t));
        QmmAffineArgs a = int4_args(qw, m, f, y.data(), work.data(), ws - 1);
        EXPECT_FALSE(qmm_affine_launch(c, a, stream).ok()) << name << ": a short workspace ran";
        a.workspace_bytes = ws;
        const auto download_y = [&] {
          HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
          return download<uint16_t>(y.data(), static_cast<size_t>(m) * f.n, stream);
        };
        HONE_CUDA_CHECK(cudaMemsetAsync(work.data(), 0xa5, ws, stream));
        HONE_CUDA_CHECK(cudaMemsetAsync(y.data(), 0xff, y.size(), stream));
        ASSERT_TRUE(qmm_affine_launch(c, a, stream).ok()) << name;
        const std::vector<uint16_t> first = download_y();
        EXPECT_LE(compare_bf16(qw.checked_rows(first), qw.reference()).relative_l2,
                  kAffineLinearRelativeL2Bound)
            << name;
        HONE_CUDA_CHECK(cudaMemsetAsync(y.data(), 0xff, y.size(), stream));
        for (int i = 0; i < 20; ++i)
          ASSERT_TRUE(qmm_affine_launch(c, a, stream).ok()) << name;
        EXPECT_EQ(differing(download_y(), first), 0u) << name << ": 20 launches in a row";
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        HONE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        const bool captured = qmm_affine_launch(c, a, stream).ok();
        HONE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        ASSERT_TRUE(captured) << name;
        HONE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        HONE_CUDA_CHECK(cudaMemsetAsync(y.data(), 0xff, y.size(), stream));
        for (int i = 0; i < 200; ++i)
          HONE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        const std::vector<uint16_t> replayed = download_y();
        HONE_CUDA_CHECK(cudaGraphExecDestroy(exec));
        HONE_CUDA_CHECK(cudaGraphDestroy(graph));
        EXPECT_EQ(differing(replayed, first), 0u) << name << ": 200 graph replays";
        ++ran;
      });
  EXPECT_GT(ran, 0) << "no stream-K config ran";
}

// The TMA engine's lookahead kernels (at 256-deep blocks eight steps' wgmma issued as one commit
// group, each batch's A fragments formed while the batch before runs; elsewhere the next step's
// exact integers formed before the wait for the wgmma before) add the same products in the same
// order as their plain twins, one wgmma at a time: the same bits,
// split-K, stream-K and one slice alike, on fresh inputs with the output poisoned before each
// launch. A stream-K pair is compared bit for bit where both launch the same persistent grid
// (the same workspace: as many CTAs as are resident, which follows each kernel's registers); a
// grid of other CTAs splits the tiles at other K blocks, another order of additions (H100,
// 2026-12-07-9 call1: 8-32 outputs of 128 x 1000 differed where the two grids did), and each is
// then held to the reference alone.
TEST_F(QmmAffineOpTest, LookaheadKernelsGiveTheirPlainTwinsBits) {
  const Format f = reduced_shapes() ? Format{1000, 1536, 4, 64} : Format{4096, 4096, 4, 64};
  int pairs = 0;
  const auto lookahead = [](const QmmAffineConfig &c) {
    return c.path == kQmmMmaPath && c.engine == kQmmEngineTmaAhead;
  };
  for_each_int4_config(
      f, {37, 128}, lookahead,
      [&](QmmAffineWorkload &qw, int m, const QmmAffineConfig &c, const std::string &name) {
        const cudaStream_t stream = qw.stream();
        const auto run = [&](const QmmAffineConfig &config) {
          const size_t ws = qmm_affine_workspace_bytes(config, m, f.n, f.k, 4, f.group);
          DeviceBuffer work(ws > 0 ? ws : 1), y(static_cast<size_t>(m) * f.n * sizeof(uint16_t));
          const QmmAffineArgs a = int4_args(qw, m, f, y.data(), ws > 0 ? work.data() : nullptr, ws);
          HONE_CUDA_CHECK(cudaMemsetAsync(y.data(), 0xff, y.size(), stream));
          EXPECT_TRUE(qmm_affine_launch(config, a, stream).ok()) << config.to_tactic().str();
          HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
          return download<uint16_t>(y.data(), static_cast<size_t>(m) * f.n, stream);
        };
        QmmAffineConfig plain = c;
        plain.engine = kQmmEngineTma;
        const std::vector<uint16_t> ahead = run(c);
        EXPECT_LE(compare_bf16(qw.checked_rows(ahead), qw.reference()).relative_l2,
                  kAffineLinearRelativeL2Bound)
            << name;
        const std::vector<uint16_t> twin = run(plain);
        EXPECT_LE(compare_bf16(qw.checked_rows(twin), qw.reference()).relative_l2,
                  kAffineLinearRelativeL2Bound)
            << plain.to_tactic().str() << " m=" << m;
        const size_t ws = qmm_affine_workspace_bytes(c, m, f.n, f.k, 4, f.group);
        if (ws != qmm_affine_workspace_bytes(plain, m, f.n, f.k, 4, f.group))
          return;
        EXPECT_EQ(differing(ahead, twin), 0u)
            << name << " against its plain twin (workspace " << ws << " bytes)";
        ++pairs;
      });
  EXPECT_GT(pairs, 0) << "no lookahead kernel ran";
}

// The default of every model shape, bits and group, at M = 1, 33, 512 (and 2048 at int4 g128).
TEST_F(QmmAffineOpTest, ModelShapesEveryBitsAndGroup) {
  if (reduced_shapes())
    GTEST_SKIP() << "model shapes skipped under HONE_DEVICE_TEST_REDUCED";
  const TunableOp &op = qmm_op();
  std::vector<Linear> shapes(std::begin(kLlama8b), std::end(kLlama8b));
  shapes.insert(shapes.end(), std::begin(kQwen15b), std::end(kQwen15b));
  for (const Linear &l : shapes)
    for (int bits : {4, 8})
      for (int group : {32, 64, 128})
        for (int m : {1, 33, 512, 2048}) {
          if (m == 2048 && (bits != 4 || group != 128))
            continue;
          const Format f{l.n, l.k, bits, group};
          const Shape shape = shape_of(m, f);
          std::unique_ptr<Workload> w = op.prepare(shape);
          const Tactic t = op.default_tactic(op.buckets().map(shape).value());
          const CheckResult r = w->check(t, Numerics::tolerance);
          EXPECT_TRUE(r.pass()) << l.name << " " << describe(f) << " m=" << m << " " << t.str()
                                << ": " << r.reason;
        }
}

TEST_F(QmmAffineOpTest, Prefill8192OnOneShape) {
  if (reduced_shapes())
    GTEST_SKIP() << "M=8192 skipped under HONE_DEVICE_TEST_REDUCED";
  const TunableOp &op = qmm_op();
  const Shape shape = shape_of(8192, {4096, 4096, 4, 128});
  std::unique_ptr<Workload> w = op.prepare(shape);
  int ran = 0;
  for (const Tactic &t : op.candidates(op.buckets().map(shape).value())) {
    if (std::string why; w->can_run(t, &why) != Status::ok)
      continue;
    const CheckResult r = w->check(t, Numerics::tolerance);
    EXPECT_TRUE(r.pass()) << t.str() << ": " << r.reason;
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

// The gate must be able to fail: the default's output passes against its own reference and
// fails, by far, against the reference of another copy's weights, of the nibbles of every word
// reversed, and of the scales shifted by one group.
TEST_F(QmmAffineOpTest, GateDiscriminatesWrongWeights) {
  const TunableOp &op = qmm_op();
  for (int bits : {4, 8}) {
    const Format f{1024, 2048, bits, 64};
    const Shape shape = shape_of(100, f);
    std::unique_ptr<Workload> w = op.prepare(shape);
    auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
    qw.set_rotation(2);
    const Tactic def = op.default_tactic(op.buckets().map(shape).value());
    qw.poison_output();
    qw.run(def, 0);
    HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
    const std::vector<uint16_t> y = qw.download_y();
    EXPECT_LE(compare_bf16(qw.checked_rows(y), qw.reference()).relative_l2,
              kAffineLinearRelativeL2Bound);
    const QmvAffineProblem p = qw.problem();
    const std::vector<uint16_t> x = qw.download_x(0);
    const std::vector<uint32_t> q = qw.download_q(0);
    std::vector<uint16_t> scales = qw.download_scales(0);
    const std::vector<uint16_t> biases = qw.download_biases(0);
    EXPECT_GT(compare_bf16(y, qmv_affine_reference(x, qw.download_q(1), qw.download_scales(1),
                                                   qw.download_biases(1), p))
                  .relative_l2,
              0.5);
    std::vector<uint32_t> reversed = q;
    const int per_word = 32 / bits;
    const uint32_t mask = (1u << bits) - 1u;
    for (uint32_t &word : reversed) {
      uint32_t out = 0;
      for (int j = 0; j < per_word; ++j)
        out |= ((word >> (j * bits)) & mask) << ((per_word - 1 - j) * bits);
      word = out;
    }
    EXPECT_GT(compare_bf16(y, qmv_affine_reference(x, reversed, scales, biases, p)).relative_l2,
              0.1);
    std::rotate(scales.begin(), scales.begin() + 1, scales.end());
    EXPECT_GT(compare_bf16(y, qmv_affine_reference(x, q, scales, biases, p)).relative_l2, 0.1);
  }
}

// A row the kernel does not write stays poisoned and the gate's NaN count sees it, sampled
// reference or not: launched on m - 1 rows of an m-row workload, row m - 1 is all NaN (TMA
// stores nothing past the problem's M either).
TEST_F(QmmAffineOpTest, UnwrittenRowStaysPoisoned) {
  const TunableOp &op = qmm_op();
  for (int m : {7, 200}) {
    const Format f{512, 1024, 4, 64};
    const Shape shape = shape_of(m, f);
    std::unique_ptr<Workload> w = op.prepare(shape);
    auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
    const QmmAffineConfig def =
        QmmAffineConfig::from_tactic(op.default_tactic(op.buckets().map(shape).value()));
    qw.poison_output();
    ASSERT_TRUE(qw.launch(def, 0, qw.x(0), qw.y(), m - 1).ok());
    HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
    const std::vector<uint16_t> y = qw.download_y();
    size_t poisoned = 0;
    for (size_t i = 0; i < y.size(); ++i)
      poisoned += y[i] == kBf16Poison ? 1 : 0;
    EXPECT_EQ(poisoned, static_cast<size_t>(f.n)) << "m=" << m;
    for (int j = 0; j < f.n; ++j)
      ASSERT_EQ(y[static_cast<size_t>(m - 1) * f.n + j], kBf16Poison);
  }
}

TEST_F(QmmAffineOpTest, SampledReferenceCoversFirstAndLastRows) {
  const TunableOp &op = qmm_op();
  std::unique_ptr<Workload> w = op.prepare(shape_of(1000, {256, 512, 4, 64}));
  auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
  const std::vector<int64_t> rows = qw.reference_rows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(kAffineLinearReferenceRows));
  ASSERT_EQ(qw.reference_row_count(), kAffineLinearReferenceRows);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 999);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end());
  EXPECT_EQ(qw.reference().size(), rows.size() * 256);
  std::unique_ptr<Workload> small = op.prepare(shape_of(64, {256, 512, 4, 64}));
  EXPECT_TRUE(dynamic_cast<QmmAffineWorkload &>(*small).reference_rows().empty());
  // Large weights sample fewer rows (never below 16): 28672 x 4096 -> 18.
  std::unique_ptr<Workload> big = op.prepare(shape_of(64, {28672, 4096, 4, 128}));
  auto &bw = dynamic_cast<QmmAffineWorkload &>(*big);
  EXPECT_EQ(bw.reference_row_count(), 18);
  EXPECT_EQ(bw.reference_rows().size(), 18u);
}

TEST_F(QmmAffineOpTest, InputsAreFreshPerCheck) {
  const TunableOp &op = qmm_op();
  const Shape shape = shape_of(16, {256, 1024, 4, 32});
  std::unique_ptr<Workload> w = op.prepare(shape);
  auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
  EXPECT_EQ(w->bytes_per_launch(),
            size_t{256} * 1024 / 2 + 2 * 2 * 256 * (1024 / 32) + 2 * (16 * 1024 + 16 * 256));
  const std::vector<uint32_t> q0 = qw.download_q(0);
  ASSERT_TRUE(
      w->check(op.default_tactic(op.buckets().map(shape).value()), Numerics::tolerance).pass());
  EXPECT_NE(qw.download_q(0), q0) << "check() draws fresh inputs";
}

TEST_F(QmmAffineOpTest, SpillingConfigsAreRejectedWithResources) {
  const TunableOp &op = qmm_op();
  for (int bits : {4, 8}) {
    std::unique_ptr<Workload> w = op.prepare(shape_of(512, {4096, 4096, bits, 128}));
    int spilling = 0;
    for (const QmmAffineConfig &c : qmm_affine_configs(bits)) {
      const KernelResources res = qmm_affine_resources(c, bits);
      EXPECT_GT(res.registers, 0) << c.to_tactic().str();
      EXPECT_GT(qmm_affine_stages(c, bits), 1) << c.to_tactic().str();
      spilling += expect_spill_rule(*w, c.to_tactic(), res) ? 1 : 0;
    }
    EXPECT_EQ(spilling, 0) << "bits=" << bits << ": every compiled kernel must be spill-free";
    std::printf("bits=%d: %zu configs compiled, %d spill\n", bits, qmm_affine_configs(bits).size(),
                spilling);
  }
}

TEST_F(QmmAffineOpTest, ForeignTacticCannotRun) {
  std::unique_ptr<Workload> w = qmm_op().prepare(shape_of(64, {256, 256, 4, 64}));
  std::string reason;
  EXPECT_EQ(w->can_run(Tactic{"qmv.affine.mma", {{"rows_per_cta", 8}}}, &reason),
            Status::cannot_implement);
  QmmAffineConfig odd;
  odd.tile_m = 48;
  reason.clear();
  EXPECT_EQ(w->can_run(odd.to_tactic(), &reason), Status::cannot_implement);
  EXPECT_NE(reason.find("not a compiled"), std::string::npos) << reason;
}

// --- device: entry point, peer, tuner -----------------------------------------------------------

TEST_F(QmmAffineOpTest, EntryPointRunsTheResolvedTacticOnCallerBuffers) {
  const TunableOp &op = qmm_op();
  DispatcherOptions options = DispatcherOptions::from_settings(Settings{});
  options.use_cache = false; // the defaults, whatever a cache on this machine holds
  Dispatcher d(backend(), options);
  for (int m : {1, 100, 1000}) {
    const Format f{1024, 2048, 4, 64};
    const Shape shape = shape_of(m, f);
    std::unique_ptr<Workload> w = op.prepare(shape);
    auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
    DeviceBuffer y(static_cast<size_t>(m) * f.n * sizeof(uint16_t));
    HONE_CUDA_CHECK(cudaMemsetAsync(y.data(), 0xff, y.size(), qw.stream()));
    ops::cuda::qmm_affine(qw.x(0), qw.q(0), qw.scales(0), qw.biases(0), y.data(), m, f.n, f.k,
                          f.bits, f.group, qw.stream(), d);
    qw.poison_output();
    qw.run(d.lookup(op, shape), 0);
    HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
    EXPECT_EQ(download<uint16_t>(y.data(), static_cast<size_t>(m) * f.n, qw.stream()),
              qw.download_y())
        << "m=" << m;
    EXPECT_LE(compare_bf16(qw.checked_rows(qw.download_y()), qw.reference()).relative_l2,
              kAffineLinearRelativeL2Bound);
  }
  // Misaligned or bad arguments are refused before any launch.
  DeviceBuffer buf(1 << 20);
  const auto *q = static_cast<const uint32_t *>(buf.data());
  EXPECT_THROW(ops::cuda::qmm_affine(static_cast<char *>(buf.data()) + 2, q, buf.data(), buf.data(),
                                     buf.data(), 64, 256, 256, 4, 64, nullptr, d),
               Error);
  EXPECT_THROW(ops::cuda::qmm_affine(buf.data(), q, buf.data(), buf.data(), buf.data(), 64, 256,
                                     250, 4, 64, nullptr, d),
               Error);
}

TEST_F(QmmAffineOpTest, CublasDequantPeerMatchesTheReference) {
  const TunableOp &op = qmm_op();
  EXPECT_NE(Registry::global().find_peer(op, "cublas.dequant"), nullptr);
  EXPECT_EQ(Registry::global().find_peer(op, "cublas"), nullptr)
      << "bf16 cuBLAS on dequantised weights is a representation change, never 'cublas'";
  std::unique_ptr<Workload> w = op.prepare(shape_of(512, {1024, 2048, 4, 128}));
  auto &qw = dynamic_cast<QmmAffineWorkload &>(*w);
  std::unique_ptr<Peer> peer = make_cublas_dequant_affine_linear_peer(qw);
  qw.poison_output();
  peer->run(0);
  HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
  EXPECT_LE(compare_bf16(qw.checked_rows(qw.download_y()), qw.reference()).relative_l2,
            kAffineLinearRelativeL2Bound);
  ForeignWorkload foreign;
  EXPECT_THROW(make_cublas_dequant_affine_linear_peer(foreign), Error);
}

class QmmAffineTuneTest : public CacheDirTest {
protected:
  QmmAffineTuneTest() : CacheDirTest("hone-qmm-tune-test-", "HONE_TACTIC_QMM_AFFINE") {}
  void SetUp() override {
    CacheDirTest::SetUp();
    if (!IsSkipped() && !qmm_affine_built())
      GTEST_SKIP() << "this build has no qmm.affine kernels";
  }
};

TEST_F(QmmAffineTuneTest, TunesCachesAndServesThePick) {
  const TunableOp &op = qmm_op();
  Backend &be = backend();
  const Shape shape = shape_of(reduced_shapes() ? 64 : 512, {2048, 2048, 4, 128});
  const Shape bucket = op.buckets().map(shape).value();
  TuneOptions options;
  options.tuner.samples = 5;
  const TuneReport report = tune_bucket(be, op, bucket, options);
  EXPECT_EQ(report.numerics, Numerics::tolerance);
  const TuneResult &r = report.result;
  EXPECT_EQ(r.candidates[r.default_index].status, Status::ok)
      << r.candidates[r.default_index].reason;
  EXPECT_EQ(r.candidates[r.pick_index].status, Status::ok);
  EXPECT_LE(r.pick_s, r.default_s * 1.05) << "the pick is never slower than the default";
  std::printf("tuned %s: %zu candidates, pick %s ratio %.3f, default %.2f us\n",
              report.bucket_text.c_str(), r.candidates.size(), r.pick().str().c_str(), r.ratio,
              r.default_s * 1e6);
  testing::expect_served_from_cache(be, op, shape, report, dir_);
}

// HONE_QMM_TILE_* through a dispatcher: the tile wins over the cache, verbatim.
TEST_F(QmmAffineTuneTest, TileEnvironmentWinsThroughTheDispatcher) {
  const TunableOp &op = qmm_op();
  const QmmAffineConfig first = qmm_affine_configs(4).front();
  ASSERT_EQ(setenv("HONE_QMM_TILE_M", std::to_string(first.tile_m).c_str(), 1), 0);
  ASSERT_EQ(setenv("HONE_QMM_TILE_N", std::to_string(first.tile_n).c_str(), 1), 0);
  ASSERT_EQ(setenv("HONE_QMM_TILE_K", std::to_string(first.tile_k).c_str(), 1), 0);
  Dispatcher d(backend(), DispatcherOptions::from_env());
  const Resolution &r = d.resolve(op, shape_of(300, {1024, 1024, 4, 128}));
  EXPECT_EQ(r.source, Source::env_override);
  const QmmAffineConfig got = r.compiled.as<QmmAffineConfig>();
  EXPECT_EQ(got.tile_m, first.tile_m);
  EXPECT_EQ(got.tile_n, first.tile_n);
  EXPECT_EQ(got.tile_k, first.tile_k);
  ASSERT_EQ(setenv("HONE_QMM_TILE_M", "48", 1), 0);
  Dispatcher bad(backend(), DispatcherOptions::from_env());
  EXPECT_THROW(bad.resolve(op, shape_of(300, {1024, 1024, 4, 128})), Error);
  for (const char *v : {"HONE_QMM_TILE_M", "HONE_QMM_TILE_N", "HONE_QMM_TILE_K"})
    unsetenv(v);
}

} // namespace
} // namespace hone::cuda

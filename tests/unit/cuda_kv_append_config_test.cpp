// kv_append host logic, no device: tactic spelling and its refusals, can_implement reasons,
// and the gate's page table (every request's new token in its own slot, earlier pages valid).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/kv_append/kv_append.h"
#include "cuda/ops/kv_append_op.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

TEST(KvAppendConfig, TacticRoundTripsAndRefusals) {
  for (const KvAppendConfig &c : kv_append_configs())
    EXPECT_EQ(KvAppendConfig::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
  EXPECT_EQ(kv_append_default(1, 8, 128).to_tactic().str(), "kv_append.paged:vec=8,threads=128");
  EXPECT_EQ(kv_append_default(1, 1, 128).threads, 32);
  EXPECT_THROW(KvAppendConfig::from_tactic(Tactic::parse("kv_append.paged:vec=8,threads=96")),
               Error);
  EXPECT_THROW(KvAppendConfig::from_tactic(Tactic::parse("kv_append.paged:vec=8")), Error);
}

TEST(KvAppendConfig, CanImplementNamesTheReason) {
  std::string why;
  EXPECT_FALSE(kv_append_can_implement({8, 256}, 1, 1, 64, &why)); // 8 vectors a request
  EXPECT_NE(why.find("idle threads"), std::string::npos) << why;
  EXPECT_FALSE(kv_append_can_implement({8, 128}, 1, 8, 100, &why));
  EXPECT_NE(why.find("head_dim=100"), std::string::npos) << why;
}

TEST(KvAppendGateTable, EveryRequestOwnsOneSlot) {
  for (int page_size : {1, 16, 64})
    for (int batch : {1, 5, 16, 130}) {
      const KvAppendGateTable t = kv_append_gate_table(batch, page_size);
      ASSERT_EQ(t.indptr.size(), static_cast<size_t>(batch) + 1);
      ASSERT_EQ(t.last_page_len.size(), static_cast<size_t>(batch));
      for (int b = 0; b < batch; ++b) {
        ASSERT_LT(t.indptr[b], t.indptr[b + 1]);
        const int page = t.indices[static_cast<size_t>(t.indptr[b + 1] - 1)];
        const int slot = t.last_page_len[static_cast<size_t>(b)] - 1;
        ASSERT_GE(slot, 0);
        ASSERT_LT(slot, page_size);
        EXPECT_EQ(page * page_size + slot, b); // the gate's output is exactly the batch's slots
      }
      for (int32_t page : t.indices) {
        EXPECT_GE(page, 0);
        EXPECT_LT(page, t.num_pages);
      }
    }
}

} // namespace
} // namespace hone::cuda

#include "decode_step_chain_op.h"

#include <string>

#include "hone/error.h"
#include "model/decode_step.h"

namespace hone {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

DecodeStepChainOp::DecodeStepChainOp()
    : buckets_{{DimSpec::exact_then_pow2_up("batch", 1, model::kMaxStepBatch, 0),
                DimSpec::one_of("bits", {4, 8, 16}), DimSpec::one_of("group", {0, 32, 64, 128}),
                DimSpec::one_of("page_size", {16, 32, 64}), DimSpec::exact("hidden", 1, 1 << 20),
                DimSpec::exact("layers", 1, 4096), DimSpec::exact("model", 0, kChainMaxModelId)}} {}

std::vector<Tactic> DecodeStepChainOp::candidates(const Shape &) const {
  return {chain_tactic(false), chain_tactic(true), chain_tactic(true, kChainKvPrefetchKib),
          chain_tactic(true, 0, true)};
}

Tactic DecodeStepChainOp::default_tactic(const Shape &) const { return chain_tactic(false); }

void DecodeStepChainOp::validate(const Shape &shape) const {
  if (static_cast<size_t>(shape.rank) != buckets_.dims.size())
    HONE_INVALID_ARGUMENT(std::string(kChainOpName) +
                          " takes 7 dimensions (batch, bits, group, page_size, hidden, layers, "
                          "model), got " +
                          str(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT(std::string(kChainOpName) + " takes dtype bf16, got " +
                          std::string(to_string(shape.dtype)));
  for (int i = 0; i < shape.rank; ++i) {
    const DimSpec &d = buckets_.dims[static_cast<size_t>(i)];
    if (!d.map(shape[i]))
      HONE_INVALID_ARGUMENT(std::string(kChainOpName) + ": " + d.name + "=" + str(shape[i]) +
                            " is outside its buckets");
  }
  const int64_t bits = shape[1], group = shape[2], hidden = shape[4];
  if ((bits == 16) != (group == 0))
    HONE_INVALID_ARGUMENT(std::string(kChainOpName) + ": bits=" + str(bits) + " with group=" +
                          str(group) + " (bf16 weights have group 0, affine ones 32, 64 or 128)");
  if (group > 0 && hidden % group != 0)
    HONE_INVALID_ARGUMENT(std::string(kChainOpName) + ": hidden=" + str(hidden) +
                          " is not a multiple of group=" + str(group));
}

std::unique_ptr<Workload> DecodeStepChainOp::prepare(const Shape &) const {
  HONE_INVALID_ARGUMENT(std::string(kChainOpName) +
                        " is tuned by `hone tune --model` on CUDA graphs of the whole decode "
                        "step, not per launch");
}

CompiledTactic DecodeStepChainOp::compile(const Tactic &tactic) const {
  const auto &ps = tactic.params;
  if (tactic.kernel == kChainOpName && !ps.empty() && ps[0].first == "pdl" &&
      (ps[0].second == 0 || ps[0].second == 1)) {
    ChainChoice c{ps[0].second == 1, 0, false};
    size_t i = 1;
    if (c.pdl && i < ps.size() && ps[i].first == "kv_prefetch" && ps[i].second >= 1 &&
        ps[i].second <= kChainMaxKvPrefetchKib)
      c.kv_prefetch_kib = static_cast<int>(ps[i++].second);
    if (c.pdl && i < ps.size() && ps[i].first == "early" && ps[i].second == 1) {
      c.early_trigger = true;
      ++i;
    }
    if (i == ps.size())
      return CompiledTactic::of(c);
  }
  HONE_INVALID_ARGUMENT(std::string(kChainOpName) + ": tactic '" + tactic.str() + "' is not " +
                        chain_tactic(false).str() + ", " + chain_tactic(true).str() + " or " +
                        chain_tactic(true).str() + ",kv_prefetch=K (K in 1.." +
                        str(kChainMaxKvPrefetchKib) + "), either optionally followed by ,early=1");
}

Tactic chain_tactic(bool pdl, int kv_prefetch_kib, bool early_trigger) {
  Tactic t{std::string(kChainOpName), {{"pdl", pdl ? 1 : 0}}};
  if (pdl && kv_prefetch_kib > 0)
    t.params.emplace_back("kv_prefetch", kv_prefetch_kib);
  if (pdl && early_trigger)
    t.params.emplace_back("early", 1);
  return t;
}

Tactic chain_tactic(const ChainChoice &choice) {
  return chain_tactic(choice.pdl, choice.kv_prefetch_kib, choice.early_trigger);
}

} // namespace hone

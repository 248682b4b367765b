#include "hone/model_matrix.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <span>

#include "hone/chain_tactic.h"
#include "hone/error.h"
#include "hone/global_options.h"
#include "hone/key.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/shape_arg.h"
#include "hone/tune.h"

namespace hone::cli {

namespace {

// True when the op's dimension names are exactly `names`, in order.
bool has_dims(const TunableOp &op, const std::vector<std::string> &names) {
  const std::vector<DimSpec> &dims = op.buckets().dims;
  if (dims.size() != names.size())
    return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name != names[i])
      return false;
  return true;
}

// True when the op's dimensions begin with rows, n, k (a linear layer's problem).
bool is_linear(const TunableOp &op) {
  const std::vector<DimSpec> &dims = op.buckets().dims;
  return dims.size() >= 3 && dims[0].name == "rows" && dims[1].name == "n" && dims[2].name == "k";
}

// True when the op's dimensions begin with rows, inter, k: the MLP's gate/up linear with its
// SiLU x up epilogue (qmv.affine.silu_mul), whose problems come from the gate_up layer alone.
bool is_gate_up(const TunableOp &op) {
  const std::vector<DimSpec> &dims = op.buckets().dims;
  return dims.size() >= 3 && dims[0].name == "rows" && dims[1].name == "inter" &&
         dims[2].name == "k";
}

// The dimension values beyond rows, n, k (or rows, inter, k) that a model run can fill; nullopt
// names none.
std::optional<std::vector<int64_t>> model_extras(const TunableOp &op, int bits, int group) {
  std::vector<int64_t> extras;
  const std::vector<DimSpec> &dims = op.buckets().dims;
  for (size_t i = 3; i < dims.size(); ++i) {
    if (dims[i].name == "bits")
      extras.push_back(bits);
    else if (dims[i].name == "group")
      extras.push_back(group);
    else
      return std::nullopt;
  }
  return extras;
}

// True when `op` is one of the step's small ops. One of their names with other dimensions is
// a mismatch between the op and step_op_shapes(), a bug.
bool is_step_op(const TunableOp &op) {
  const std::vector<std::string> &names = step_op_dim_names(op.name());
  if (names.empty())
    return false;
  HONE_CHECK(has_dims(op, names), std::string(op.name()) + " has dimensions " + dim_names(op) +
                                      "; the decode step's shapes of it do not fit them");
  return true;
}

// True when `op` takes `first`, the first shape of the model for it. A model the op cannot take
// is an error when the op was named (`named`), else a note and no problems of the op.
bool model_fits(const TunableOp &op, const std::vector<int64_t> &first, bool named) {
  try {
    op.validate(Shape(std::span<const int64_t>(first), op.dtype()));
  } catch (const Error &e) {
    if (named || e.kind() != ErrorKind::invalid_argument)
      throw;
    std::cerr << "note: " << op.name() << " skipped: " << e.what() << '\n';
    return false;
  }
  return true;
}

// The decode attention steps of `config` for `op`. Steps whose workload does not fit in the
// device's memory are left out, with a note, and so are the steps whose K and V cache over all
// of the model's layers exceeds the device's free memory: no runtime can serve them on this
// device, and they are the costliest buckets to tune.
void add_attention_problems(std::vector<Problem> &problems, const TunableOp &op,
                            const model::ModelSpec &config, const ModelMatrixOptions &o, bool named,
                            const Backend &backend) {
  const std::vector<DecodeAttentionStep> steps = decode_attention_steps(config, o.page_size);
  if (!model_fits(op, steps.front().dims, named))
    return;
  int too_large = 0, unservable = 0;
  const std::optional<size_t> free_bytes = backend.available_memory_bytes();
  for (const DecodeAttentionStep &step : steps) {
    if (free_bytes && model_kv_bytes(config, step.batch * step.context) > *free_bytes) {
      ++unservable;
      continue;
    }
    const Shape shape(std::span<const int64_t>(step.dims), op.dtype());
    if (const std::optional<Shape> bucket = op.buckets().map(shape);
        bucket && memory_shortfall(backend, op, *bucket)) {
      ++too_large;
      continue;
    }
    add_problem(problems, op, shape, "attention", backend);
  }
  if (too_large > 0)
    std::cerr << "note: " << op.name() << ": " << too_large << " of " << steps.size()
              << " batch x context steps do not fit in device memory and are left out\n";
  if (unservable > 0)
    std::cerr << "note: " << op.name() << ": " << unservable << " of " << steps.size()
              << " batch x context steps are left out: the K and V cache of all " << config.layers
              << " layers would exceed the device's free memory\n";
}

// The launches of small op `op` in a step over each row count its rows dimension covers.
void add_step_op_problems(std::vector<Problem> &problems, const TunableOp &op,
                          const model::ModelSpec &config, const ModelMatrixOptions &o, bool named,
                          const Backend &backend) {
  const DimSpec &rows_dim = op.buckets().dims[0];
  bool checked = false;
  for (int64_t r : o.rows) {
    if (r < rows_dim.lo || r > rows_dim.hi)
      continue;
    for (const StepOpShape &s : step_op_shapes(config, r, o.page_size)) {
      if (s.op != op.name())
        continue;
      if (!checked && !model_fits(op, s.dims, named))
        return;
      checked = true;
      add_problem(problems, op, Shape(std::span<const int64_t>(s.dims), op.dtype()), s.use,
                  backend);
    }
  }
}

} // namespace

void add_problem(std::vector<Problem> &problems, const TunableOp &op, const Shape &shape,
                 const std::string &layer, const Backend &backend) {
  op.validate(shape);
  const std::optional<Shape> bucket = op.buckets().map(shape);
  if (!bucket)
    HONE_INVALID_ARGUMENT(std::string(op.name()) + ": shape " + op.buckets().describe(shape) +
                          " is outside the op's buckets");
  op.validate(*bucket);
  if (std::optional<std::string> shortfall = memory_shortfall(backend, op, *bucket))
    HONE_INVALID_ARGUMENT(*shortfall);
  op.env_override(*bucket, settings()); // throws naming a malformed or unrunnable variable
  const std::string key = cache_key(op, *bucket, backend.info().model);
  for (Problem &p : problems)
    if (p.key == key) {
      if (!layer.empty() && std::find(p.layers.begin(), p.layers.end(), layer) == p.layers.end())
        p.layers.push_back(layer);
      return;
    }
  Problem p;
  p.op = &op;
  p.shape = shape;
  p.bucket = *bucket;
  p.bucket_text = op.buckets().describe(*bucket);
  p.key = key;
  if (!layer.empty())
    p.layers.push_back(layer);
  problems.push_back(std::move(p));
}

ModelOps select_model_ops(const Backend &backend, const std::string &ops_list, int bits,
                          int group) {
  ModelOps ops;
  const auto classify = [&](const TunableOp &op) {
    if (is_linear(op) && model_extras(op, bits, group))
      ops.linear.push_back(&op);
    else if (is_gate_up(op) && model_extras(op, bits, group))
      ops.gate_up.push_back(&op);
    else if (has_dims(op, decode_attention_dim_names()))
      ops.attention.push_back(&op);
    else if (is_step_op(op))
      ops.step.push_back(&op);
    else if (op.name() == kChainOpName)
      ops.chain = &op;
    else
      return false;
    return true;
  };
  if (ops_list.empty()) {
    for (const TunableOp *op : Registry::global().ops(backend.info().backend))
      classify(*op);
    if (ops.linear.empty())
      HONE_INVALID_ARGUMENT("backend " + backend.info().backend +
                            " has no op with dimensions rows, n, k to tune a model with");
    return ops;
  }
  ops.named = true;
  for (const std::string &name : split_list(ops_list, "--ops")) {
    const TunableOp &op = find_op(name, backend);
    if (!classify(op))
      HONE_INVALID_ARGUMENT("--ops: op '" + name + "' has dimensions " + dim_names(op) +
                            "; a model fills rows, n, k, bits and group (rows, inter, k for "
                            "the gate/up linear with its SiLU epilogue), the dimensions of "
                            "decode attention (batch, max_len, total_len, hq, hkv, head_dim, "
                            "page_size) and those of the step's rmsnorm, rope, kv_append and "
                            "silu_mul");
  }
  return ops;
}

std::vector<Problem> model_problems(const model::ModelSpec &config, const ModelOps &ops,
                                    const ModelMatrixOptions &o, const Backend &backend) {
  std::vector<Problem> problems;
  // `op`'s buckets of one layer, {rows, n, k, extras...} at each row count its buckets cover:
  // gemv.bf16 and qmv.affine stop at 32, qmm.affine and quantized_linear run prefill up to
  // 16384, the fused gate/up takes 1-8.
  const auto add_layer = [&](const TunableOp &op, const std::string &layer, int64_t n, int64_t k) {
    const std::vector<int64_t> extras = *model_extras(op, o.bits, o.group);
    const DimSpec &rows_dim = op.buckets().dims[0];
    for (int64_t r : o.rows) {
      if (r < rows_dim.lo || r > rows_dim.hi)
        continue;
      std::vector<int64_t> dims = {r, n, k};
      dims.insert(dims.end(), extras.begin(), extras.end());
      add_problem(problems, op, Shape(std::span<const int64_t>(dims), op.dtype()), layer, backend);
    }
  };
  for (const TunableOp *op : ops.linear)
    for (const LinearLayer &layer : linear_layers(config, o.include_lm_head))
      add_layer(*op, layer.name, layer.n, layer.k);
  for (const TunableOp *op : ops.gate_up) {
    std::vector<int64_t> first = {op->buckets().dims[0].lo, config.inter, config.hidden};
    const std::vector<int64_t> extras = *model_extras(*op, o.bits, o.group);
    first.insert(first.end(), extras.begin(), extras.end());
    // An op that cannot take this model (8-bit weights have no fused epilogue) is a note unless
    // named.
    if (model_fits(*op, first, ops.named))
      add_layer(*op, "gate_up", config.inter, config.hidden);
  }
  for (const TunableOp *op : ops.step)
    add_step_op_problems(problems, *op, config, o, ops.named, backend);
  if (problems.empty() && !(ops.linear.empty() && ops.gate_up.empty() && ops.step.empty()))
    HONE_INVALID_ARGUMENT("--rows: no op to tune takes these row counts");
  for (const TunableOp *op : ops.attention)
    add_attention_problems(problems, *op, config, o, ops.named, backend);
  if (problems.empty() && ops.chain == nullptr)
    HONE_INVALID_ARGUMENT("--model " + config.name + ": nothing to tune");
  return problems;
}

std::string per_op_counts(const std::vector<Problem> &problems) {
  std::vector<std::pair<const TunableOp *, int>> counts;
  for (const Problem &p : problems) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto &c) { return c.first == p.op; });
    if (it == counts.end())
      counts.emplace_back(p.op, 1);
    else
      ++it->second;
  }
  if (counts.size() < 2)
    return {};
  std::string text;
  for (const auto &[op, n] : counts)
    text += (text.empty() ? ": " : ", ") + std::to_string(n) + " " + std::string(op->name());
  return text;
}

} // namespace hone::cli

// The tuning matrix of `hone tune`: the buckets it measures, derived and validated before
// anything is measured. For a model: every linear op (dimensions rows, n, k[, bits, group])
// over the model's linear layers x the row counts, the small ops of the decode step (rmsnorm,
// rope, kv_append, silu_mul) over the same row counts, and decode attention (decode.paged)
// over batch x context. Shapes that map to one bucket are one problem naming every layer that
// maps there, so no bucket is tuned twice.
//
//   ModelOps ops = select_model_ops(backend, /*ops_list=*/"", 4, 64);
//   std::vector<Problem> matrix = model_problems(config, ops, {}, backend);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hone/backend.h"
#include "hone/model_config.h"
#include "hone/op.h"
#include "hone/shape.h"

namespace hone::cli {

// One bucket to tune: the first raw shape that mapped to it, and every model layer that did.
struct Problem {
  const TunableOp *op = nullptr;
  Shape shape;
  Shape bucket;
  std::string bucket_text;
  std::string key;                 // cache key
  std::vector<std::string> layers; // model layers mapping here ("qkv", "norm", ...); empty for --op
};

// Validates `shape` for `op`, maps it to its bucket, checks that the bucket's workload fits in
// the device's memory and that any HONE_TACTIC_* override of the op is valid, and appends it
// unless its bucket is already listed (then only the layer name is added). Nothing is
// measured, so a bad shape anywhere in the matrix stops the run before any measurement.
// Throws Error(invalid_argument) naming the shape, the bucket or the override.
void add_problem(std::vector<Problem> &problems, const TunableOp &op, const Shape &shape,
                 const std::string &layer, const Backend &backend);

// The ops a model run tunes, by kind.
struct ModelOps {
  std::vector<const TunableOp *> linear;    // dimensions rows, n, k[, bits, group]
  std::vector<const TunableOp *> gate_up;   // rows, inter, k[, ...]: the fused gate/up linear
  std::vector<const TunableOp *> step;      // rmsnorm, rope, kv_append, silu_mul
  std::vector<const TunableOp *> attention; // decode.paged's dimensions
  const TunableOp *chain = nullptr;         // chain.decode_step, when the backend has it
  // From --ops: an op that cannot take the model is an error, not a note.
  bool named = false;
};
// Every op of `backend` a model fills (empty `ops_list`), or the comma-separated ops named.
// Throws Error(invalid_argument) naming an unknown op, or one whose dimensions a model cannot
// fill (with `bits` and `group` for a quantized linear).
ModelOps select_model_ops(const Backend &backend, const std::string &ops_list, int bits, int group);

struct ModelMatrixOptions {
  std::vector<int64_t> rows = default_model_rows();
  int bits = 4;   // fills a `bits` dimension of the linears
  int group = 64; // fills a `group` dimension of the linears
  bool include_lm_head = false;
  int64_t page_size = 16; // of kv_append and the decode attention steps
};

// The matrix of `config` for `ops` (the chain is not in it: it is timed on the tuned step).
// Each op takes the row counts its rows dimension covers. Throws Error(invalid_argument) for a
// shape an op rejects, one that does not fit in memory, or a matrix with nothing to tune;
// decode attention steps that do not fit in memory are left out with a note on stderr.
std::vector<Problem> model_problems(const model::ModelSpec &config, const ModelOps &ops,
                                    const ModelMatrixOptions &options, const Backend &backend);

// ": 40 qmv.affine, 56 decode.paged" in order of first appearance; empty for one op.
std::string per_op_counts(const std::vector<Problem> &problems);

} // namespace hone::cli

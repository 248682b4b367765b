// Reading a model's weights from a safetensors file (the Hugging Face format: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape and byte range,
// then the data), and assembling the weights one decode step layer uses in hone's layout: the
// q, k and v projections as one fused [qkv_width, hidden] matrix, gate and up as one fused
// [2 inter, hidden] matrix. Host only; the header is read at open, a tensor's bytes when asked
// for, so a file of any size is read one tensor at a time.
//
//   hone::model::SafetensorsFile f = hone::model::SafetensorsFile::open("model.safetensors");
//   hone::model::LayerWeights w = hone::model::layer_weights({&f}, spec, 0);
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace hone::model {

struct SafetensorsTensor {
  std::string dtype;           // "BF16", "F16", "F32", ...
  std::vector<int64_t> shape;  // row-major
  uint64_t begin = 0, end = 0; // [bytes] within the data section
};

class SafetensorsFile {
public:
  // Reads and checks the header. Throws Error(invalid_argument) naming the path and the field:
  // a file that cannot be read, a header length past the file, a header that is not a JSON
  // object, a tensor without a string dtype, a shape of non-negative integers or data_offsets
  // [begin, end] inside the data section and of the size its dtype and shape give.
  static SafetensorsFile open(const std::filesystem::path &path);

  const std::filesystem::path &path() const { return path_; }
  // nullptr when the file has no tensor of that name.
  const SafetensorsTensor *find(const std::string &name) const;
  std::vector<std::string> names() const;
  // The tensor's bytes. Throws Error(invalid_argument) naming a missing tensor, Error(runtime)
  // when the file cannot be read any more.
  std::vector<uint8_t> read(const std::string &name) const;

private:
  std::filesystem::path path_;
  uint64_t data_offset_ = 0; // 8 + header length
  std::map<std::string, SafetensorsTensor> tensors_;
};

// Bytes per element of a safetensors dtype ("BF16" 2, "F32" 4, ...); 0 for an unknown one.
int safetensors_dtype_bytes(const std::string &dtype);

// The tensor `name` of the first of `files` that has it, as bf16 bit patterns (row-major).
// Throws Error(invalid_argument) naming the tensor: missing from every file, not BF16, or of a
// shape other than `shape` (both shapes named).
std::vector<uint16_t> read_bf16(const std::vector<const SafetensorsFile *> &files,
                                const std::string &name, const std::vector<int64_t> &shape);

// The bf16 weights of one layer, row-major, in the order DecodeStep uses them.
struct LayerWeights {
  std::vector<uint16_t> qkv;          // [qkv_width, hidden]: q rows, then k, then v
  std::vector<uint16_t> qkv_bias;     // [qkv_width] where the model has one, else empty
  std::vector<uint16_t> o;            // [hidden, hq x head_dim]
  std::vector<uint16_t> gate_up;      // [2 inter, hidden]: gate rows, then up
  std::vector<uint16_t> down;         // [hidden, inter]
  std::vector<uint16_t> norm1, norm2; // [hidden]: input and post-attention rmsnorm weights
};

// The Hugging Face tensors of one layer (model.layers.L.self_attn.q_proj.weight, ...), in the
// order layer_weights reads them and an export writes them, each with its shape and the part of
// LayerWeights it fills (the fused parts in row order: q, k, v; gate, up).
struct LayerTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<uint16_t> LayerWeights::*part;
};
std::vector<LayerTensor> layer_tensors(const ModelSpec &spec, int64_t layer);

// Layer `layer` from the Hugging Face tensor names (model.layers.L.self_attn.q_proj.weight,
// ...), looked up in `files` in order (a sharded checkpoint is several files). Throws
// Error(invalid_argument) naming the tensor: missing from every file, not BF16, or of a shape
// other than `spec` gives.
LayerWeights layer_weights(const std::vector<const SafetensorsFile *> &files, const ModelSpec &spec,
                           int64_t layer);

} // namespace hone::model

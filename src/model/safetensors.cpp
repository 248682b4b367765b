#include "model/safetensors.h"

#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "hone/error.h"

namespace hone::model {

namespace {

std::string where(const std::filesystem::path &path, const std::string &name) {
  return "safetensors '" + path.string() + "', tensor '" + name + "'";
}

uint64_t little_endian_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

} // namespace

int safetensors_dtype_bytes(const std::string &dtype) {
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return 0;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    HONE_INVALID_ARGUMENT("safetensors '" + path.string() + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    HONE_INVALID_ARGUMENT("cannot read safetensors '" + path.string() + "'");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec || file_size < 8)
    HONE_INVALID_ARGUMENT("safetensors '" + path.string() + "': " + std::to_string(file_size) +
                          " bytes, shorter than its 8-byte header length");
  unsigned char head[8];
  in.read(reinterpret_cast<char *>(head), 8);
  const uint64_t header_bytes = little_endian_u64(head);
  if (header_bytes > file_size - 8)
    HONE_INVALID_ARGUMENT("safetensors '" + path.string() + "': header length " +
                          std::to_string(header_bytes) + " runs past the file (" +
                          std::to_string(file_size) + " bytes)");
  std::string text(header_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_bytes));
  if (!in)
    HONE_INVALID_ARGUMENT("cannot read the header of safetensors '" + path.string() + "'");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    HONE_INVALID_ARGUMENT("safetensors '" + path.string() + "': header is not valid JSON (" +
                          e.what() + ")");
  }
  if (!header.is_object())
    HONE_INVALID_ARGUMENT("safetensors '" + path.string() + "': header is not a JSON object");

  SafetensorsFile f;
  f.path_ = path;
  f.data_offset_ = 8 + header_bytes;
  const uint64_t data_bytes = file_size - f.data_offset_;
  for (const auto &[name, entry] : header.items()) {
    if (name == "__metadata__")
      continue;
    const std::string at = where(path, name);
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string())
      HONE_INVALID_ARGUMENT(at + ": no string 'dtype'");
    SafetensorsTensor t;
    t.dtype = entry["dtype"].get<std::string>();
    const int element = safetensors_dtype_bytes(t.dtype);
    if (element == 0)
      HONE_INVALID_ARGUMENT(at + ": unknown dtype '" + t.dtype + "'");
    if (!entry.contains("shape") || !entry["shape"].is_array())
      HONE_INVALID_ARGUMENT(at + ": no 'shape' array");
    uint64_t elements = 1;
    for (const auto &d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        HONE_INVALID_ARGUMENT(at + ": shape entry " + d.dump() + " is not a non-negative integer");
      t.shape.push_back(d.get<int64_t>());
      const auto dim = static_cast<uint64_t>(t.shape.back());
      if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / dim)
        HONE_INVALID_ARGUMENT(at + ": shape overflows");
      elements *= dim;
    }
    const auto &offsets = entry.contains("data_offsets") ? entry["data_offsets"] : nlohmann::json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      HONE_INVALID_ARGUMENT(at + ": no 'data_offsets' [begin, end] of non-negative integers");
    t.begin = offsets[0].get<uint64_t>();
    t.end = offsets[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_bytes)
      HONE_INVALID_ARGUMENT(at + ": data_offsets [" + std::to_string(t.begin) + ", " +
                            std::to_string(t.end) + "] lie outside the " +
                            std::to_string(data_bytes) + " data bytes");
    if (t.end - t.begin != elements * static_cast<uint64_t>(element))
      HONE_INVALID_ARGUMENT(at + ": " + std::to_string(t.end - t.begin) + " bytes, its dtype " +
                            t.dtype + " and shape give " +
                            std::to_string(elements * static_cast<uint64_t>(element)));
    f.tensors_.emplace(name, std::move(t));
  }
  return f;
}

const SafetensorsTensor *SafetensorsFile::find(const std::string &name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto &[name, t] : tensors_)
    out.push_back(name);
  return out;
}

std::vector<uint8_t> SafetensorsFile::read(const std::string &name) const {
  const SafetensorsTensor *t = find(name);
  if (!t)
    HONE_INVALID_ARGUMENT(where(path_, name) + ": no such tensor");
  std::ifstream in(path_, std::ios::binary);
  std::vector<uint8_t> out(t->end - t->begin);
  in.seekg(static_cast<std::streamoff>(data_offset_ + t->begin));
  in.read(reinterpret_cast<char *>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!in)
    HONE_RUNTIME_ERROR(where(path_, name) + ": cannot read its " + std::to_string(out.size()) +
                       " bytes");
  return out;
}

std::vector<uint16_t> read_bf16(const std::vector<const SafetensorsFile *> &files,
                                const std::string &name, const std::vector<int64_t> &shape) {
  for (const SafetensorsFile *f : files) {
    const SafetensorsTensor *t = f->find(name);
    if (!t)
      continue;
    if (t->dtype != "BF16")
      HONE_INVALID_ARGUMENT(where(f->path(), name) + ": dtype " + t->dtype + ", not BF16");
    if (t->shape != shape) {
      const auto list = [](const std::vector<int64_t> &dims) {
        std::string out;
        for (int64_t d : dims) {
          if (!out.empty())
            out += ',';
          out += std::to_string(d);
        }
        return out;
      };
      const std::string got = list(t->shape), want = list(shape);
      HONE_INVALID_ARGUMENT(where(f->path(), name) + ": shape [" + got + "], the model's is [" +
                            want + "]");
    }
    const std::vector<uint8_t> bytes = f->read(name);
    std::vector<uint16_t> out(bytes.size() / 2);
    std::memcpy(out.data(), bytes.data(), out.size() * 2); // little-endian bf16 bits
    return out;
  }
  HONE_INVALID_ARGUMENT("tensor '" + name + "' is in none of the " + std::to_string(files.size()) +
                        " safetensors files");
}

std::vector<LayerTensor> layer_tensors(const ModelSpec &spec, int64_t layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  const int64_t h = spec.hidden, qw = spec.hq * spec.head_dim, kvw = spec.hkv * spec.head_dim;
  std::vector<LayerTensor> out = {{p + "self_attn.q_proj.weight", {qw, h}, &LayerWeights::qkv},
                                  {p + "self_attn.k_proj.weight", {kvw, h}, &LayerWeights::qkv},
                                  {p + "self_attn.v_proj.weight", {kvw, h}, &LayerWeights::qkv}};
  if (spec.qkv_bias) {
    out.push_back({p + "self_attn.q_proj.bias", {qw}, &LayerWeights::qkv_bias});
    out.push_back({p + "self_attn.k_proj.bias", {kvw}, &LayerWeights::qkv_bias});
    out.push_back({p + "self_attn.v_proj.bias", {kvw}, &LayerWeights::qkv_bias});
  }
  out.push_back({p + "self_attn.o_proj.weight", {h, qw}, &LayerWeights::o});
  out.push_back({p + "mlp.gate_proj.weight", {spec.inter, h}, &LayerWeights::gate_up});
  out.push_back({p + "mlp.up_proj.weight", {spec.inter, h}, &LayerWeights::gate_up});
  out.push_back({p + "mlp.down_proj.weight", {h, spec.inter}, &LayerWeights::down});
  out.push_back({p + "input_layernorm.weight", {h}, &LayerWeights::norm1});
  out.push_back({p + "post_attention_layernorm.weight", {h}, &LayerWeights::norm2});
  return out;
}

LayerWeights layer_weights(const std::vector<const SafetensorsFile *> &files, const ModelSpec &spec,
                           int64_t layer) {
  if (layer < 0 || layer >= spec.layers)
    HONE_INVALID_ARGUMENT("layer " + std::to_string(layer) + " is outside 0.." +
                          std::to_string(spec.layers - 1) + " of " + spec.name);
  LayerWeights w;
  for (const LayerTensor &t : layer_tensors(spec, layer)) {
    const std::vector<uint16_t> values = read_bf16(files, t.name, t.shape);
    (w.*t.part).insert((w.*t.part).end(), values.begin(), values.end());
  }
  return w;
}

} // namespace hone::model

// A model checkpoint's safetensors files, as Hugging Face stores them: one file, or a directory
// holding either model.safetensors.index.json (whose "weight_map" names the file of every
// tensor: a sharded checkpoint) or a single model.safetensors. Only headers are read at open;
// tensors are read one at a time through the files (layer_weights, read_bf16).
//
//   hone::model::Checkpoint c = hone::model::Checkpoint::open("Qwen2.5-0.5B/");
//   hone::model::LayerWeights w = hone::model::layer_weights(c.files(), spec, 0);
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace hone::model {

class Checkpoint {
public:
  // Throws Error(invalid_argument) naming the path: missing, a directory with neither an index
  // nor model.safetensors, an index that is not JSON with a "weight_map" object of file names,
  // or a file the index names that is missing or malformed (SafetensorsFile::open's errors).
  static Checkpoint open(const std::filesystem::path &path);

  const std::filesystem::path &path() const { return path_; }
  // The files in the order tensors are looked up (the index's files sorted by name).
  std::vector<const SafetensorsFile *> files() const;
  // True when some file holds a tensor of this name.
  bool has(const std::string &name) const;

private:
  std::filesystem::path path_;
  std::vector<SafetensorsFile> files_;
};

} // namespace hone::model

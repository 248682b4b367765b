// Writing a safetensors file (the format SafetensorsFile reads) one tensor at a time: every
// tensor's name, dtype and shape are declared up front, so the header is written first and the
// data streams after it in the declared order; host memory holds one tensor, never the file.
// The file is written under a temporary name and renamed into place by finish(), so a reader
// never sees a half-written file.
//
//   hone::model::SafetensorsWriter w("out.safetensors", {{"a", "BF16", {2, 3}}});
//   w.write("a", bytes.data(), bytes.size());
//   w.finish();
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hone::model {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;          // "BF16", "F32", "I32", ...
  std::vector<int64_t> shape; // row-major
};

class SafetensorsWriter {
public:
  // Opens `path`'s temporary file and writes the header (tensors in the order given, data
  // offsets packed). Throws Error(invalid_argument) naming a duplicate or empty name, an unknown
  // dtype or a negative dimension; Error(runtime) when the file cannot be written.
  SafetensorsWriter(std::filesystem::path path, std::vector<SafetensorsEntry> entries);
  // Removes the temporary file unless finish() ran.
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter &) = delete;
  SafetensorsWriter &operator=(const SafetensorsWriter &) = delete;

  // The data of the next tensor, little-endian. Throws Error(invalid_argument) naming the tensor
  // when it is not the next one declared or `bytes` is not its size; Error(runtime) when the
  // write fails.
  void write(const std::string &name, const void *data, size_t bytes);
  // Flushes, closes and renames the file into place. Throws Error(invalid_argument) naming the
  // first tensor not written, Error(runtime) when the file cannot be written.
  void finish();

private:
  std::filesystem::path path_, temporary_;
  std::vector<SafetensorsEntry> entries_;
  std::vector<uint64_t> bytes_; // per entry
  size_t next_ = 0;
  std::ofstream out_;
  bool finished_ = false;
};

} // namespace hone::model

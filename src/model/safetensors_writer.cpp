#include "model/safetensors_writer.h"

#include <set>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "hone/error.h"
#include "model/safetensors.h"

namespace hone::model {

SafetensorsWriter::SafetensorsWriter(std::filesystem::path path,
                                     std::vector<SafetensorsEntry> entries)
    : path_(std::move(path)), entries_(std::move(entries)) {
  temporary_ = path_;
  temporary_ += ".tmp." + std::to_string(::getpid());
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const SafetensorsEntry &e : entries_) {
    const std::string at = "safetensors '" + path_.string() + "', tensor '" + e.name + "'";
    if (e.name.empty() || e.name == "__metadata__" || !names.insert(e.name).second)
      HONE_INVALID_ARGUMENT(at + ": empty, reserved or declared twice");
    const int element = safetensors_dtype_bytes(e.dtype);
    if (element == 0)
      HONE_INVALID_ARGUMENT(at + ": unknown dtype '" + e.dtype + "'");
    uint64_t bytes = static_cast<uint64_t>(element);
    for (int64_t d : e.shape) {
      if (d < 0)
        HONE_INVALID_ARGUMENT(at + ": negative dimension " + std::to_string(d));
      bytes *= static_cast<uint64_t>(d);
    }
    header[e.name] = {
        {"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {offset, offset + bytes}}};
    bytes_.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump();
  // Padded with spaces so that the data starts at a multiple of 8 bytes (as the reference
  // implementation writes it).
  text.append((8 - text.size() % 8) % 8, ' ');
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_)
    HONE_RUNTIME_ERROR("cannot write '" + temporary_.string() + "'");
  unsigned char length[8];
  uint64_t n = text.size();
  for (unsigned char &c : length) {
    c = static_cast<unsigned char>(n & 0xff);
    n >>= 8;
  }
  out_.write(reinterpret_cast<const char *>(length), 8);
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out_)
    HONE_RUNTIME_ERROR("cannot write the header of '" + temporary_.string() + "'");
}

SafetensorsWriter::~SafetensorsWriter() {
  if (!finished_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temporary_, ec);
  }
}

void SafetensorsWriter::write(const std::string &name, const void *data, size_t bytes) {
  const std::string at = "safetensors '" + path_.string() + "', tensor '" + name + "'";
  if (finished_ || next_ >= entries_.size() || entries_[next_].name != name)
    HONE_INVALID_ARGUMENT(at + ": written out of order (the next declared is " +
                          (next_ < entries_.size() ? "'" + entries_[next_].name + "'" : "none") +
                          ")");
  if (bytes != bytes_[next_])
    HONE_INVALID_ARGUMENT(at + ": " + std::to_string(bytes) + " bytes, its dtype and shape give " +
                          std::to_string(bytes_[next_]));
  out_.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
  if (!out_)
    HONE_RUNTIME_ERROR(at + ": cannot write its " + std::to_string(bytes) + " bytes");
  ++next_;
}

void SafetensorsWriter::finish() {
  if (finished_)
    return;
  if (next_ < entries_.size())
    HONE_INVALID_ARGUMENT("safetensors '" + path_.string() + "': tensor '" + entries_[next_].name +
                          "' was declared but not written");
  out_.close();
  if (!out_)
    HONE_RUNTIME_ERROR("cannot write '" + temporary_.string() + "'");
  std::error_code ec;
  std::filesystem::rename(temporary_, path_, ec);
  if (ec)
    HONE_RUNTIME_ERROR("cannot rename '" + temporary_.string() + "' to '" + path_.string() +
                       "': " + ec.message());
  finished_ = true;
}

} // namespace hone::model

#include "model/checkpoint.h"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hone/error.h"

namespace hone::model {

namespace {

constexpr const char *kIndex = "model.safetensors.index.json";
constexpr const char *kSingle = "model.safetensors";

// The shard files an index names, sorted, relative to its directory.
std::vector<std::filesystem::path> index_files(const std::filesystem::path &index) {
  std::ifstream in(index);
  if (!in)
    HONE_INVALID_ARGUMENT("cannot read checkpoint index '" + index.string() + "'");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception &e) {
    HONE_INVALID_ARGUMENT("checkpoint index '" + index.string() + "': not valid JSON (" + e.what() +
                          ")");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    HONE_INVALID_ARGUMENT("checkpoint index '" + index.string() + "': no 'weight_map' object");
  std::set<std::string> names;
  for (const auto &[tensor, file] : j["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        std::filesystem::path(file.get<std::string>()).has_parent_path())
      HONE_INVALID_ARGUMENT("checkpoint index '" + index.string() + "': weight_map['" + tensor +
                            "'] is not a file name in its directory");
    names.insert(file.get<std::string>());
  }
  if (names.empty())
    HONE_INVALID_ARGUMENT("checkpoint index '" + index.string() + "': 'weight_map' is empty");
  std::vector<std::filesystem::path> out;
  for (const std::string &name : names)
    out.push_back(index.parent_path() / name);
  return out;
}

} // namespace

Checkpoint Checkpoint::open(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    HONE_INVALID_ARGUMENT("checkpoint '" + path.string() + "' does not exist");
  std::vector<std::filesystem::path> paths;
  if (std::filesystem::is_directory(path, ec)) {
    if (std::filesystem::exists(path / kIndex, ec))
      paths = index_files(path / kIndex);
    else if (std::filesystem::exists(path / kSingle, ec))
      paths.push_back(path / kSingle);
    else
      HONE_INVALID_ARGUMENT("checkpoint directory '" + path.string() + "' has neither " + kIndex +
                            " nor " + kSingle);
  } else {
    paths.push_back(path);
  }
  Checkpoint c;
  c.path_ = path;
  for (const std::filesystem::path &p : paths)
    c.files_.push_back(SafetensorsFile::open(p));
  return c;
}

std::vector<const SafetensorsFile *> Checkpoint::files() const {
  std::vector<const SafetensorsFile *> out;
  for (const SafetensorsFile &f : files_)
    out.push_back(&f);
  return out;
}

bool Checkpoint::has(const std::string &name) const {
  for (const SafetensorsFile &f : files_)
    if (f.find(name))
      return true;
  return false;
}

} // namespace hone::model

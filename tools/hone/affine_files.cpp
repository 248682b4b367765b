#include "hone/affine_files.h"

#include <algorithm>
#include <bit>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/npy.h"

namespace hone::cli {

// Raw files hold the host's representation of float, uint32 and bf16.
static_assert(std::endian::native == std::endian::little, "hone's files are little-endian");

namespace fs = std::filesystem;

namespace {

// [elements] the largest n * k accepted: far beyond any weight matrix, far below overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;
// [bytes] the largest .npy header read (NumPy writes under 100 bytes for a 2-D array).
constexpr size_t kMaxNpyHeader = size_t{1} << 20;

std::string quoted(const fs::path &p) {
  std::string s = "'";
  s += p.string();
  s += '\'';
  return s;
}

void check_dims(int64_t n, int64_t k, const std::string &source) {
  if (n < 1)
    HONE_INVALID_ARGUMENT(source + ": n=" + std::to_string(n) + " is below 1");
  if (k < 1)
    HONE_INVALID_ARGUMENT(source + ": k=" + std::to_string(k) + " is below 1");
  if (n > kMaxElements / k)
    HONE_INVALID_ARGUMENT(source + ": n=" + std::to_string(n) + ", k=" + std::to_string(k) +
                          " is more than 2^40 elements");
}

uintmax_t size_of(const fs::path &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    HONE_INVALID_ARGUMENT("cannot read " + quoted(path) + ": it is a directory");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec)
    HONE_INVALID_ARGUMENT("cannot read " + quoted(path) + ": " + ec.message());
  return size;
}

void read_exact(std::ifstream &in, void *data, size_t bytes, const fs::path &path) {
  in.read(static_cast<char *>(data), static_cast<std::streamsize>(bytes));
  if (!in || static_cast<size_t>(in.gcount()) != bytes)
    HONE_RUNTIME_ERROR("reading " + std::to_string(bytes) + " bytes of " + quoted(path) +
                       " failed");
}

std::ifstream open_input(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    HONE_INVALID_ARGUMENT("cannot open " + quoted(path) + " for reading");
  return in;
}

// Reads a header-less file that must hold exactly `count` values of T.
template <class T>
std::vector<T> read_array(const fs::path &path, int64_t count, const std::string &expected) {
  const uintmax_t size = size_of(path);
  const auto bytes = static_cast<uintmax_t>(count) * sizeof(T);
  if (size != bytes)
    HONE_INVALID_ARGUMENT(quoted(path) + " is " + std::to_string(size) + " bytes, expected " +
                          expected + " = " + std::to_string(bytes));
  std::vector<T> values(static_cast<size_t>(count));
  std::ifstream in = open_input(path);
  read_exact(in, values.data(), static_cast<size_t>(bytes), path);
  return values;
}

// A path that is removed (recursively) on destruction unless released: the temporary file or
// directory of an atomic write, so that a failure leaves nothing behind.
class TemporaryPath {
public:
  explicit TemporaryPath(fs::path path) : path_(std::move(path)) {}
  ~TemporaryPath() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  TemporaryPath(const TemporaryPath &) = delete;
  TemporaryPath &operator=(const TemporaryPath &) = delete;
  const fs::path &path() const { return path_; }
  void release() { path_.clear(); }

private:
  fs::path path_;
};

// "dir/.name.tmp-PID" beside `target`.
fs::path sibling(const fs::path &target, const char *what) {
  std::string name = ".";
  name += target.filename().string();
  name += std::string(".") + what + "-" + std::to_string(::getpid());
  return target.parent_path() / name;
}

// `path` without a trailing separator, so that "w4/" names the directory w4.
fs::path normalized(const fs::path &path) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename() && p.has_parent_path())
    p = p.parent_path();
  return p;
}

// Throws naming `target` when the directory it would be written into does not exist.
void check_parent(const fs::path &target) {
  const fs::path parent = target.parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    HONE_INVALID_ARGUMENT("cannot write " + quoted(target) + ": directory " + quoted(parent) +
                          " does not exist");
}

void write_bytes(const fs::path &path, const void *data, size_t bytes, std::ios::openmode mode) {
  std::ofstream out(path, std::ios::binary | mode);
  if (!out)
    HONE_INVALID_ARGUMENT("cannot write " + quoted(path));
  out.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
  out.close();
  if (!out)
    HONE_RUNTIME_ERROR("writing " + std::to_string(bytes) + " bytes to " + quoted(path) +
                       " failed");
}

void rename_or_fail(const fs::path &from, const fs::path &to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec)
    HONE_RUNTIME_ERROR("renaming " + quoted(from) + " to " + quoted(to) +
                       " failed: " + ec.message());
}

int64_t integer_field(const nlohmann::json &header, const char *field, const std::string &source) {
  const auto it = header.find(field);
  if (it == header.end())
    HONE_INVALID_ARGUMENT(source + ": field '" + field + "' is missing");
  if (!it->is_number_integer())
    HONE_INVALID_ARGUMENT(source + ": field '" + field + "' must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

void check_affine(int64_t k, int64_t bits, int64_t group, const std::string &source) {
  if (bits != 4 && bits != 8)
    HONE_INVALID_ARGUMENT(source + ": bits=" + std::to_string(bits) + " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    HONE_INVALID_ARGUMENT(source + ": group=" + std::to_string(group) + " is not 32, 64 or 128");
  if (k % group != 0)
    HONE_INVALID_ARGUMENT(source + ": k=" + std::to_string(k) +
                          " is not a multiple of group=" + std::to_string(group));
}

} // namespace

bool is_npy_path(const fs::path &path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".npy";
}

FloatMatrix read_float_matrix(const fs::path &path, std::optional<int64_t> n,
                              std::optional<int64_t> k) {
  const uintmax_t size = size_of(path);
  std::ifstream in = open_input(path);
  const std::string source = path.string();
  FloatMatrix m;
  uintmax_t data_bytes = size;
  if (is_npy_path(path)) {
    std::string header(static_cast<size_t>(std::min<uintmax_t>(size, 12)), '\0');
    read_exact(in, header.data(), header.size(), path);
    const size_t header_size = npy_header_size(header, source);
    if (header_size > kMaxNpyHeader || header_size > size)
      HONE_INVALID_ARGUMENT(source + ": .npy header claims " + std::to_string(header_size) +
                            " bytes but the file has " + std::to_string(size));
    const size_t have = header.size();
    header.resize(header_size);
    if (header_size > have)
      read_exact(in, header.data() + have, header_size - have, path);
    const NpyHeader h = parse_npy_header(header, source);
    in.seekg(static_cast<std::streamoff>(header_size));
    if (h.descr != "<f4")
      HONE_INVALID_ARGUMENT(source + ": dtype '" + h.descr +
                            "' is not little-endian float32 ('<f4'); save w.astype(np.float32)");
    if (h.fortran_order)
      HONE_INVALID_ARGUMENT(source + ": fortran_order is True; save a C-order array "
                                     "(np.ascontiguousarray(w))");
    if (h.shape.size() != 2) {
      std::string shape;
      for (int64_t d : h.shape)
        shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      HONE_INVALID_ARGUMENT(source + ": shape (" + shape + ") is not 2-D [n, k]");
    }
    for (auto [given, value, name] : {std::tuple{n, h.shape[0], "n"}, {k, h.shape[1], "k"}})
      if (given && *given != value)
        HONE_INVALID_ARGUMENT(source + ": --" + name + " " + std::to_string(*given) +
                              " differs from the .npy shape (" + std::to_string(h.shape[0]) + ", " +
                              std::to_string(h.shape[1]) + ")");
    m.n = h.shape[0];
    m.k = h.shape[1];
    check_dims(m.n, m.k, source);
    data_bytes = size - header_size;
  } else {
    if (!n || !k)
      HONE_INVALID_ARGUMENT(source + ": a raw float32 file needs --n and --k (or give an .npy "
                                     "file, whose header holds the shape)");
    m.n = *n;
    m.k = *k;
    check_dims(m.n, m.k, "--n/--k");
  }
  const auto expected = static_cast<uintmax_t>(m.n * m.k) * sizeof(float);
  if (data_bytes != expected)
    HONE_INVALID_ARGUMENT(source + " holds " + std::to_string(data_bytes) +
                          " bytes of data, expected n * k * 4 = " + std::to_string(expected) +
                          " for n=" + std::to_string(m.n) + ", k=" + std::to_string(m.k));
  m.values.resize(static_cast<size_t>(m.n * m.k));
  read_exact(in, m.values.data(), static_cast<size_t>(expected), path);
  return m;
}

void write_float_matrix(const fs::path &path, const FloatMatrix &m) {
  const fs::path target = normalized(path);
  std::error_code ec;
  if (fs::is_directory(target, ec))
    HONE_INVALID_ARGUMENT("output " + quoted(path) + " is a directory; name a file");
  check_parent(target);
  TemporaryPath temporary(sibling(target, "tmp"));
  const std::string header = is_npy_path(target) ? npy_header("<f4", {m.n, m.k}) : "";
  write_bytes(temporary.path(), header.data(), header.size(), std::ios::trunc);
  write_bytes(temporary.path(), m.values.data(), m.values.size() * sizeof(float), std::ios::app);
  rename_or_fail(temporary.path(), target);
  temporary.release();
}

void check_affine_output(const fs::path &dir) {
  const fs::path target = normalized(dir);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target, ec))) {
    check_parent(target);
    return;
  }
  if (!fs::is_directory(target, ec) || !fs::exists(target / kAffineHeaderFile, ec))
    HONE_INVALID_ARGUMENT("output " + quoted(dir) +
                          " exists and is not a quantized directory (no " +
                          std::string(kAffineHeaderFile) + "); it is not overwritten");
}

void write_affine_directory(const fs::path &dir, const AffineDirectory &a) {
  const fs::path target = normalized(dir);
  check_affine_output(target);
  check_affine(a.k, a.bits, a.group, "quantized directory");
  const int64_t words = a.n * a.k * a.bits / 32, groups = a.n * (a.k / a.group);
  HONE_CHECK(a.q.packed.size() == static_cast<size_t>(words) &&
                 a.q.scales.size() == static_cast<size_t>(groups) &&
                 a.q.biases.size() == static_cast<size_t>(groups),
             "quantized arrays do not match n, k, bits and group");

  TemporaryPath temporary(sibling(target, "tmp"));
  std::error_code ec;
  fs::create_directory(temporary.path(), ec);
  if (ec)
    HONE_INVALID_ARGUMENT("cannot create " + quoted(temporary.path()) + ": " + ec.message());
  nlohmann::ordered_json header = {
      {"format", kAffineFormat},
      {"format_version", kAffineFormatVersion},
      {"n", a.n},
      {"k", a.k},
      {"bits", a.bits},
      {"group", a.group},
      {"byte_order", "little"},
      {"layout", "w[n, k] = q[n, k] * scales[n, k / group] + biases[n, k / group]; q packed "
                 "along k, 32 / bits values per uint32 word, lowest bits first"},
      {"arrays",
       {{"q", {{"file", "q.bin"}, {"dtype", "uint32"}, {"shape", {a.n, a.k * a.bits / 32}}}},
        {"scales",
         {{"file", "scales.bin"}, {"dtype", "bfloat16"}, {"shape", {a.n, a.k / a.group}}}},
        {"biases",
         {{"file", "biases.bin"}, {"dtype", "bfloat16"}, {"shape", {a.n, a.k / a.group}}}}}}};
  const std::string text = header.dump(2) + "\n";
  write_bytes(temporary.path() / kAffineHeaderFile, text.data(), text.size(), std::ios::trunc);
  write_bytes(temporary.path() / "q.bin", a.q.packed.data(), a.q.packed.size() * 4,
              std::ios::trunc);
  write_bytes(temporary.path() / "scales.bin", a.q.scales.data(), a.q.scales.size() * 2,
              std::ios::trunc);
  write_bytes(temporary.path() / "biases.bin", a.q.biases.data(), a.q.biases.size() * 2,
              std::ios::trunc);

  if (fs::exists(fs::symlink_status(target, ec))) {
    // Replace the old directory: set it aside, move the new one in, then drop the old one.
    TemporaryPath old(sibling(target, "old"));
    rename_or_fail(target, old.path());
    fs::rename(temporary.path(), target, ec);
    if (ec) {
      fs::rename(old.path(), target, ec);
      old.release();
      HONE_RUNTIME_ERROR("renaming " + quoted(temporary.path()) + " to " + quoted(target) +
                         " failed");
    }
  } else {
    rename_or_fail(temporary.path(), target);
  }
  temporary.release();
}

AffineDirectory read_affine_directory(const fs::path &dir) {
  const fs::path header_path = dir / kAffineHeaderFile;
  const std::string source = header_path.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    HONE_INVALID_ARGUMENT("input " + quoted(dir) +
                          " is not a quantized directory (written by `hone quantize`)");
  std::ifstream in = open_input(header_path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error &e) {
    HONE_INVALID_ARGUMENT(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object())
    HONE_INVALID_ARGUMENT(source + ": expected a JSON object, got " + header.type_name());
  const auto format = header.find("format");
  if (format == header.end() || !format->is_string() || *format != kAffineFormat)
    HONE_INVALID_ARGUMENT(source + ": field 'format' is " +
                          (format == header.end() ? std::string("missing") : format->dump()) +
                          ", expected \"" + kAffineFormat + "\"");
  const int64_t version = integer_field(header, "format_version", source);
  if (version != kAffineFormatVersion)
    HONE_INVALID_ARGUMENT(source + ": format_version " + std::to_string(version) + " is not " +
                          std::to_string(kAffineFormatVersion) + ", the version this build reads");
  AffineDirectory a;
  a.n = integer_field(header, "n", source);
  a.k = integer_field(header, "k", source);
  const int64_t bits = integer_field(header, "bits", source);
  const int64_t group = integer_field(header, "group", source);
  check_dims(a.n, a.k, source);
  check_affine(a.k, bits, group, source);
  a.bits = static_cast<int>(bits);
  a.group = static_cast<int>(group);
  const int64_t words = a.n * a.k * a.bits / 32, groups = a.n * (a.k / a.group);
  a.q.packed = read_array<uint32_t>(dir / "q.bin", words, "n * k * bits / 8");
  a.q.scales = read_array<uint16_t>(dir / "scales.bin", groups, "n * (k / group) * 2");
  a.q.biases = read_array<uint16_t>(dir / "biases.bin", groups, "n * (k / group) * 2");
  return a;
}

} // namespace hone::cli

#include "hone/npy.h"

#include <cctype>
#include <limits>

#include "hone/error.h"

namespace hone::cli {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The header's dictionary, a Python literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (4096, 4096), }
class DictParser {
public:
  DictParser(std::string_view text, const std::string &source) : text_(text), source_(source) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        mark(seen_descr, key);
        h.descr = string_literal();
      } else if (key == "fortran_order") {
        mark(seen_order, key);
        h.fortran_order = boolean();
      } else if (key == "shape") {
        mark(seen_shape, key);
        h.shape = tuple();
      } else {
        fail("unknown key '" + key + "' (an .npy header has descr, fortran_order and shape)");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      break;
    }
    skip_space();
    if (pos_ != text_.size())
      fail("unexpected text after the dictionary at offset " + std::to_string(pos_));
    for (auto [seen, key] :
         {std::pair{seen_descr, "descr"}, {seen_order, "fortran_order"}, {seen_shape, "shape"}})
      if (!seen)
        fail(std::string("key '") + key + "' is missing");
    return h;
  }

private:
  [[noreturn]] void fail(const std::string &why) const {
    HONE_INVALID_ARGUMENT(source_ + ": malformed .npy header: " + why);
  }
  void mark(bool &seen, const std::string &key) const {
    if (seen)
      fail("key '" + key + "' appears twice");
    seen = true;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c)
      fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"')
      fail("expected a quoted string at offset " + std::to_string(pos_));
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos)
      fail("unterminated string at offset " + std::to_string(pos_));
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}})
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    fail("fortran_order is not True or False at offset " + std::to_string(pos_));
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> values;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++pos_;
        return values;
      }
      values.push_back(integer());
      skip_space();
      if (peek() == 'L') // Python 2 wrote long integers as 4096L
        ++pos_;
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(')');
      return values;
    }
  }
  int64_t integer() {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        fail("shape dimension at offset " + std::to_string(start) + " is too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start)
      fail("expected a non-negative integer in shape at offset " + std::to_string(start));
    return value;
  }

  std::string_view text_;
  const std::string &source_;
  size_t pos_ = 0;
};

uint32_t little_endian(std::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;)
    v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

} // namespace

size_t npy_header_size(std::string_view prefix, const std::string &source) {
  if (prefix.size() < 10 || prefix.substr(0, kMagic.size()) != kMagic)
    HONE_INVALID_ARGUMENT(source + ": not an .npy file (no \\x93NUMPY magic at its start)");
  const int major = static_cast<unsigned char>(prefix[6]);
  const int minor = static_cast<unsigned char>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0)
    HONE_INVALID_ARGUMENT(source + ": .npy format version " + std::to_string(major) + "." +
                          std::to_string(minor) + " is not 1.0, 2.0 or 3.0");
  // Version 1.0 has a 2-byte header length, later versions a 4-byte one.
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (prefix.size() < 8 + length_bytes)
    HONE_INVALID_ARGUMENT(source + ": .npy header is truncated");
  return 8 + length_bytes + little_endian(prefix.substr(8, length_bytes));
}

NpyHeader parse_npy_header(std::string_view file, const std::string &source) {
  const size_t size = npy_header_size(file.substr(0, 12), source);
  if (file.size() < size)
    HONE_INVALID_ARGUMENT(source + ": .npy header claims " + std::to_string(size) +
                          " bytes but the file has " + std::to_string(file.size()));
  const size_t prefix = file[6] == 1 ? 10 : 12;
  NpyHeader h = DictParser(file.substr(prefix, size - prefix), source).parse();
  h.version = static_cast<unsigned char>(file[6]);
  h.data_offset = size;
  return h;
}

std::string npy_header(std::string_view descr, const std::vector<int64_t> &shape) {
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (i + 1 < shape.size() || shape.size() == 1 ? ", " : "");
  if (shape.size() == 1)
    dict.pop_back(); // (n,) as Python writes a one-tuple
  dict += "), }";
  // 10 bytes of prefix, the dictionary, spaces, one newline: a multiple of 64 in all.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

} // namespace hone::cli

// NumPy .npy headers (format versions 1.0, 2.0 and 3.0): what `np.save` writes in front of an
// array, so `hone quantize` and `hone dequantize` take and give weights in the form NumPy and
// PyTorch users already have. Only the header is handled here; the data that follows it is
// C-order, in the byte order the header's dtype names.
//
//   NpyHeader h = parse_npy_header(bytes, "w.npy");  // throws naming the bad field
//   std::string out = npy_header("<f4", {n, k});     // version 1.0, padded to 64 bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hone::cli {

struct NpyHeader {
  int version = 1;            // 1, 2 or 3 (the format's major version)
  std::string descr;          // dtype, e.g. "<f4"
  bool fortran_order = false; // true: column-major data
  std::vector<int64_t> shape; // () for a scalar
  size_t data_offset = 0;     // [bytes] from the start of the file to the data
};

// [bytes] the header's full size (magic, version, length field and dictionary) from the
// first 12 bytes of a file (fewer when the file is shorter). Throws Error(invalid_argument)
// naming `source` for a missing magic or an unknown version.
size_t npy_header_size(std::string_view prefix, const std::string &source);

// Parses the header at the start of `file` (the file's bytes, at least up to the data).
// Throws Error(invalid_argument) naming `source` and the bad part for a missing magic, an
// unknown version, a truncated header, a dictionary that is not the three keys descr,
// fortran_order and shape, or a value of the wrong kind.
NpyHeader parse_npy_header(std::string_view file, const std::string &source);

// The header of a C-order array of dtype `descr` and `shape`: version 1.0, its dictionary
// padded with spaces and ended by a newline so the data starts at a multiple of 64 bytes.
std::string npy_header(std::string_view descr, const std::vector<int64_t> &shape);

} // namespace hone::cli

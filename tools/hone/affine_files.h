// The files `hone quantize` reads and writes, and `hone dequantize` reads back: row-major
// float32 weight matrices (raw little-endian or .npy) and the quantized directory.
//
// A quantized directory (format "hone.affine", version 1) holds four files:
//   affine.json  {"format": "hone.affine", "format_version": 1, "n": N, "k": K, "bits": B,
//                 "group": G, ...}; the other keys describe the arrays and are not read back
//   q.bin        uint32 [n, k * bits / 32]: values along K, 32 / bits per word, lowest bits
//                first (the layout of hone_quantize_affine and the qmv.affine kernels)
//   scales.bin   bf16 bit patterns [n, k / group]
//   biases.bin   bf16 bit patterns [n, k / group];   w[n, k] = q * scale + bias
// all little-endian and row-major, with no header, so `np.fromfile(path, np.uint32)` reads
// them and the files can be copied to a device as they are.
//
//   FloatMatrix w = read_float_matrix("w.npy", std::nullopt, std::nullopt);
//   write_affine_directory("w4", {w.n, w.k, 4, 64, hone::ops::cpu::quantize_affine(...)});
//   AffineDirectory back = read_affine_directory("w4");
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hone/ops/cpu.h"

namespace hone::cli {

inline constexpr const char *kAffineFormat = "hone.affine";
inline constexpr int kAffineFormatVersion = 1;
inline constexpr const char *kAffineHeaderFile = "affine.json";

struct FloatMatrix {
  int64_t n = 0, k = 0;
  std::vector<float> values; // [n, k] row-major
};

// True when `path` names an .npy file (by its extension); anything else is raw.
bool is_npy_path(const std::filesystem::path &path);

// Reads a row-major float32 [n, k] matrix: an .npy file (format 1.0-3.0, dtype '<f4', C
// order, 2-D) whose header gives the shape, which `n` and `k` must match when given; else raw
// little-endian floats, which need `n` and `k` and must be exactly n * k * 4 bytes.
// Throws Error(invalid_argument) naming the path and the bad value.
FloatMatrix read_float_matrix(const std::filesystem::path &path, std::optional<int64_t> n,
                              std::optional<int64_t> k);

// Writes `m` as .npy (version 1.0) when the path ends in .npy, else as raw floats, through a
// temporary file in the same directory renamed over `path`: a failure leaves no file behind.
// Throws Error(invalid_argument) when `path` is a directory or cannot be written.
void write_float_matrix(const std::filesystem::path &path, const FloatMatrix &m);

struct AffineDirectory {
  int64_t n = 0, k = 0;
  int bits = 4, group = 64;
  ops::cpu::AffineQuantized q;
};

// Throws Error(invalid_argument) unless `dir` is a quantized directory (which
// write_affine_directory then replaces) or absent from a directory that exists: another file
// or directory is never overwritten.
void check_affine_output(const std::filesystem::path &dir);

// Writes the four files into a temporary directory next to `dir`, then renames it to `dir`
// (replacing a quantized directory there): a failure leaves nothing behind.
void write_affine_directory(const std::filesystem::path &dir, const AffineDirectory &a);

// Reads a quantized directory back. Throws Error(invalid_argument) naming the file and the
// bad value for a missing file, a header that is not valid JSON or lacks a field, a format or
// version this build does not read, bad bits, group or k, or a file of the wrong size.
AffineDirectory read_affine_directory(const std::filesystem::path &dir);

} // namespace hone::cli

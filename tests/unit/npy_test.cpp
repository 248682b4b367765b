// .npy headers (tools/hone/npy.h): what np.save writes parses, what npy_header writes parses
// back and is 64-byte aligned, and every malformed header is refused naming the file.
#include "hone/npy.h"

#include <gtest/gtest.h>

#include <string>

#include "hone/error.h"

namespace hone::cli {
namespace {

// A file start as np.save writes it: magic, version, little-endian length, dictionary.
std::string npy(std::string dict, int version = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const size_t n = dict.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (version > 1) {
    out += '\0';
    out += '\0';
  }
  return out + dict;
}

std::string error_of(const std::string &file) {
  try {
    parse_npy_header(file, "w.npy");
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  return "";
}

TEST(Npy, ParsesWhatNumpyWrites) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4096, 14336), }";
  for (int version : {1, 2, 3}) {
    const std::string file = npy(dict + "      \n", version) + "DATA";
    const NpyHeader h = parse_npy_header(file, "w.npy");
    EXPECT_EQ(h.version, version);
    EXPECT_EQ(h.descr, "<f4");
    EXPECT_FALSE(h.fortran_order);
    EXPECT_EQ(h.shape, (std::vector<int64_t>{4096, 14336}));
    EXPECT_EQ(file.substr(h.data_offset), "DATA");
  }
}

TEST(Npy, AcceptsKeyOrderQuotesOneTuplesAndPythonTwoLongs) {
  NpyHeader h = parse_npy_header(
      npy("{\"shape\": (3L, 5L), \"fortran_order\": True, \"descr\": \"<f8\"}\n"), "w.npy");
  EXPECT_EQ(h.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.descr, "<f8");
  h = parse_npy_header(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (7,)}"), "w.npy");
  EXPECT_EQ(h.shape, (std::vector<int64_t>{7}));
  h = parse_npy_header(npy("{'descr': '<f4', 'fortran_order': False, 'shape': ()}"), "w.npy");
  EXPECT_TRUE(h.shape.empty());
}

TEST(Npy, WritesAHeaderThatParsesBackAligned) {
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{4096, 4096}, std::vector<int64_t>{1, 3}, std::vector<int64_t>{9}}) {
    const std::string header = npy_header("<f4", shape);
    EXPECT_EQ(header.size() % 64, 0u);
    EXPECT_EQ(header.back(), '\n');
    const NpyHeader h = parse_npy_header(header, "out.npy");
    EXPECT_EQ(h.shape, shape);
    EXPECT_EQ(h.descr, "<f4");
    EXPECT_EQ(h.data_offset, header.size());
  }
}

TEST(Npy, RefusesMalformedHeadersNamingTheFile) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_NE(error_of("not an npy file").find("w.npy: not an .npy file"), std::string::npos);
  std::string v9 = npy(good);
  v9[6] = 9;
  EXPECT_NE(error_of(v9).find("version 9.0"), std::string::npos);
  EXPECT_NE(error_of(npy(good).substr(0, 30)).find("claims"), std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'shape': (2, 3)}")).find("'fortran_order' is missing"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                         "'shape': (2, 3)}"))
                .find("appears twice"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}"))
                .find("not True or False"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}"))
                .find("non-negative integer"),
            std::string::npos);
  EXPECT_NE(
      error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"))
          .find("too large"),
      std::string::npos);
  EXPECT_NE(
      error_of(npy("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}")).find("malformed"),
      std::string::npos);
  EXPECT_NE(error_of(npy(good + " trailing")).find("after the dictionary"), std::string::npos);
}

} // namespace
} // namespace hone::cli

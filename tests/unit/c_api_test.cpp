// The C API (include/hone/hone.h) as a C caller sees it: linked against libhone.so only.
// Every function is driven with a NULL pointer, a bad shape and a wrong dtype or op, and must
// return the documented status with a message that names the bad value.
#include "hone/hone.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;

// A private cache directory for the whole program, set before the library reads the
// environment (its first call).
class CacheDir {
public:
  CacheDir() {
    path_ = fs::temp_directory_path() / ("hone-c-api-" + std::to_string(::getpid()));
    fs::create_directories(path_);
    ::setenv("HONE_CACHE_DIR", path_.c_str(), 1);
    ::unsetenv("HONE_CACHE");
    ::unsetenv("HONE_AUTOTUNE");
  }
  ~CacheDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};
const CacheDir cache_dir;

std::string last() { return hone_last_error(); }

bool cuda_usable() {
  char buf[64];
  EXPECT_EQ(hone_backends(buf, sizeof buf, nullptr), HONE_OK);
  return std::string(buf).find("cuda") != std::string::npos;
}

// Expects `status` == `expected` and a message containing `needle`.
#define EXPECT_FAILS(call, expected, needle)                                                       \
  do {                                                                                             \
    const hone_status s_ = (call);                                                                 \
    EXPECT_EQ(s_, expected) << #call << ": " << hone_status_name(s_) << ": " << last();            \
    EXPECT_NE(last().find(needle), std::string::npos)                                              \
        << #call << ": message '" << last() << "' does not name '" << (needle) << "'";             \
  } while (0)

TEST(CApiVersion, ReportsAndChecksTheMajorVersion) {
  EXPECT_EQ(hone_api_version(),
            (uint32_t{HONE_C_API_VERSION_MAJOR} << 16) | uint32_t{HONE_C_API_VERSION_MINOR});
  EXPECT_STRNE(hone_version(), "");
  EXPECT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  EXPECT_EQ(last(), "");
  EXPECT_FAILS(hone_check_version(HONE_C_API_VERSION_MAJOR + 1), HONE_ERROR_VERSION_MISMATCH,
               "major version " + std::to_string(HONE_C_API_VERSION_MAJOR + 1));
}

TEST(CApiErrors, SuccessClearsTheLastErrorAndEveryStatusHasAName) {
  EXPECT_NE(hone_gemv_f32(nullptr, nullptr, nullptr, 1, 1, 1), HONE_OK);
  EXPECT_NE(last(), "");
  EXPECT_EQ(hone_check_version(HONE_C_API_VERSION_MAJOR), HONE_OK);
  EXPECT_EQ(last(), "");
  EXPECT_STREQ(hone_status_name(HONE_ERROR_INVALID_ARGUMENT), "HONE_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(hone_status_name(HONE_ERROR_NO_DEVICE), "HONE_ERROR_NO_DEVICE");
  EXPECT_STREQ(hone_status_name(static_cast<hone_status>(99)), "HONE_ERROR_UNKNOWN");
}

TEST(CApiErrors, LastErrorIsPerThread) {
  EXPECT_NE(hone_gemv_f32(nullptr, nullptr, nullptr, 1, 1, 1), HONE_OK);
  std::string other = "unset";
  std::thread t([&] { other = hone_last_error(); });
  t.join();
  EXPECT_EQ(other, "");
  EXPECT_NE(last(), "");
}

TEST(CApiDevice, FillsCpuInfoAndRejectsBadArguments) {
  hone_device_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(hone_device_info_get("cpu", &info), HONE_OK) << last();
  EXPECT_STREQ(info.backend, "cpu");
  EXPECT_STRNE(info.model, "");
  EXPECT_GT(info.compute_units, 0);
  EXPECT_FAILS(hone_device_info_get("cpu", nullptr), HONE_ERROR_INVALID_ARGUMENT, "info is NULL");
  hone_device_info small{};
  small.struct_size = 8;
  EXPECT_FAILS(hone_device_info_get("cpu", &small), HONE_ERROR_INVALID_ARGUMENT, "struct_size=8");
  EXPECT_FAILS(hone_device_info_get("tpu", &info), HONE_ERROR_INVALID_ARGUMENT, "'tpu'");
  if (!cuda_usable())
    EXPECT_FAILS(hone_device_info_get("cuda", &info), HONE_ERROR_NO_DEVICE, "cuda");
}

TEST(CApiStrings, SizeQueryTruncationAndNullBuffer) {
  size_t length = 0;
  EXPECT_FAILS(hone_backends(nullptr, 0, &length), HONE_ERROR_BUFFER_TOO_SMALL, "needs");
  EXPECT_GE(length, 3u);
  std::vector<char> buf(length + 1);
  ASSERT_EQ(hone_backends(buf.data(), buf.size(), &length), HONE_OK) << last();
  EXPECT_NE(std::string(buf.data()).find("cpu"), std::string::npos);
  char two[2];
  EXPECT_FAILS(hone_backends(two, sizeof two, &length), HONE_ERROR_BUFFER_TOO_SMALL, "capacity 2");
  EXPECT_EQ(std::string(two).size(), 1u); // truncated, NUL-terminated
  EXPECT_FAILS(hone_backends(nullptr, 16, &length), HONE_ERROR_INVALID_ARGUMENT,
               "out is NULL with capacity 16");
}

TEST(CApiOps, ListsOpsAndTheirDimensions) {
  char buf[256];
  ASSERT_EQ(hone_ops(buf, sizeof buf, nullptr), HONE_OK) << last();
  EXPECT_NE(std::string(buf).find("gemv.f32:cpu"), std::string::npos) << buf;
  EXPECT_NE(std::string(buf).find("qmv.affine:cpu"), std::string::npos) << buf;
  ASSERT_EQ(hone_op_dimensions("qmv.affine", buf, sizeof buf, nullptr), HONE_OK) << last();
  EXPECT_STREQ(buf, "rows,n,k,bits,group");
  EXPECT_FAILS(hone_op_dimensions(nullptr, buf, sizeof buf, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "op is NULL");
  EXPECT_FAILS(hone_op_dimensions("gemv.f64", buf, sizeof buf, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "unknown op 'gemv.f64'");
}

TEST(CApiGemvF32, ComputesAndRejectsNullsAndBadShapes) {
  const int64_t rows = 2, n = 3, k = 4;
  std::vector<float> x(rows * k, 1.0f), w(n * k, 0.5f), y(rows * n, -1.0f);
  ASSERT_EQ(hone_gemv_f32(x.data(), w.data(), y.data(), rows, n, k), HONE_OK) << last();
  for (float v : y)
    EXPECT_EQ(v, 2.0f);
  EXPECT_FAILS(hone_gemv_f32(nullptr, w.data(), y.data(), rows, n, k), HONE_ERROR_INVALID_ARGUMENT,
               "x is NULL");
  EXPECT_FAILS(hone_gemv_f32(x.data(), nullptr, y.data(), rows, n, k), HONE_ERROR_INVALID_ARGUMENT,
               "w is NULL");
  EXPECT_FAILS(hone_gemv_f32(x.data(), w.data(), nullptr, rows, n, k), HONE_ERROR_INVALID_ARGUMENT,
               "y is NULL");
  EXPECT_FAILS(hone_gemv_f32(x.data(), w.data(), y.data(), 0, n, k), HONE_ERROR_INVALID_ARGUMENT,
               "rows=0");
  EXPECT_FAILS(hone_gemv_f32(x.data(), w.data(), y.data(), rows, -3, k),
               HONE_ERROR_INVALID_ARGUMENT, "n=-3");
}

struct Quantized {
  std::vector<uint32_t> packed;
  std::vector<uint16_t> scales, biases;
};

Quantized quantize(const std::vector<float> &w, int64_t n, int64_t k, int bits, int group) {
  int64_t words = 0, groups = 0;
  EXPECT_EQ(hone_affine_sizes(n, k, bits, group, &words, &groups), HONE_OK) << last();
  Quantized q{std::vector<uint32_t>(words), std::vector<uint16_t>(groups),
              std::vector<uint16_t>(groups)};
  EXPECT_EQ(hone_quantize_affine(w.data(), n, k, bits, group, q.packed.data(), q.scales.data(),
                                 q.biases.data()),
            HONE_OK)
      << last();
  return q;
}

TEST(CApiAffine, SizesQuantizeDequantizeRoundTrip) {
  const int64_t n = 4, k = 64;
  int64_t words = 0, groups = 0;
  ASSERT_EQ(hone_affine_sizes(n, k, 4, 32, &words, &groups), HONE_OK) << last();
  EXPECT_EQ(words, n * k * 4 / 32);
  EXPECT_EQ(groups, n * k / 32);
  std::vector<float> w(n * k);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(i % 16); // exactly representable at 4 bits
  const Quantized q = quantize(w, n, k, 4, 32);
  std::vector<float> back(n * k);
  ASSERT_EQ(hone_dequantize_affine(q.packed.data(), q.scales.data(), q.biases.data(), n, k, 4, 32,
                                   back.data()),
            HONE_OK)
      << last();
  EXPECT_EQ(back, w);
}

TEST(CApiAffine, RejectsNullsAndBadBitsGroupAndK) {
  std::vector<float> w(64, 1.0f);
  std::vector<uint32_t> packed(64);
  std::vector<uint16_t> scales(64), biases(64);
  EXPECT_FAILS(hone_affine_sizes(1, 64, 3, 32, nullptr, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "bits=3");
  EXPECT_FAILS(hone_affine_sizes(1, 64, 4, 48, nullptr, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "group=48");
  EXPECT_FAILS(hone_affine_sizes(1, 100, 4, 32, nullptr, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "k=100 is not a multiple of group=32");
  EXPECT_FAILS(hone_affine_sizes(0, 64, 4, 32, nullptr, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "n=0");
  EXPECT_FAILS(
      hone_quantize_affine(nullptr, 1, 64, 4, 32, packed.data(), scales.data(), biases.data()),
      HONE_ERROR_INVALID_ARGUMENT, "w is NULL");
  EXPECT_FAILS(hone_quantize_affine(w.data(), 1, 64, 4, 32, nullptr, scales.data(), biases.data()),
               HONE_ERROR_INVALID_ARGUMENT, "packed is NULL");
  EXPECT_FAILS(
      hone_quantize_affine(w.data(), 1, 60, 4, 32, packed.data(), scales.data(), biases.data()),
      HONE_ERROR_INVALID_ARGUMENT, "k=60");
  EXPECT_FAILS(
      hone_dequantize_affine(packed.data(), nullptr, biases.data(), 1, 64, 4, 32, w.data()),
      HONE_ERROR_INVALID_ARGUMENT, "scales is NULL");
  EXPECT_FAILS(
      hone_dequantize_affine(packed.data(), scales.data(), biases.data(), 1, 64, 8, 16, w.data()),
      HONE_ERROR_INVALID_ARGUMENT, "group=16");
}

TEST(CApiQmvAffine, MatchesDequantizedGemvAndRejectsBadInput) {
  const int64_t rows = 2, n = 8, k = 128;
  std::vector<float> w(n * k), x(rows * k);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 7) % 31) / 31.0f - 0.5f;
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 3) % 17) / 17.0f;
  const Quantized q = quantize(w, n, k, 4, 64);
  std::vector<float> y(rows * n), wd(n * k), expected(rows * n);
  ASSERT_EQ(hone_qmv_affine(x.data(), q.packed.data(), q.scales.data(), q.biases.data(), y.data(),
                            rows, n, k, 4, 64),
            HONE_OK)
      << last();
  ASSERT_EQ(hone_dequantize_affine(q.packed.data(), q.scales.data(), q.biases.data(), n, k, 4, 64,
                                   wd.data()),
            HONE_OK);
  ASSERT_EQ(hone_gemv_f32(x.data(), wd.data(), expected.data(), rows, n, k), HONE_OK);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], expected[i], 1e-4f * (1.0f + std::abs(expected[i])));

  const uint32_t *p = q.packed.data();
  const uint16_t *s = q.scales.data(), *b = q.biases.data();
  EXPECT_FAILS(hone_qmv_affine(x.data(), nullptr, s, b, y.data(), rows, n, k, 4, 64),
               HONE_ERROR_INVALID_ARGUMENT, "packed is NULL");
  EXPECT_FAILS(hone_qmv_affine(x.data(), p, s, nullptr, y.data(), rows, n, k, 4, 64),
               HONE_ERROR_INVALID_ARGUMENT, "biases is NULL");
  EXPECT_FAILS(hone_qmv_affine(x.data(), p, s, b, y.data(), rows, n, 96, 4, 64),
               HONE_ERROR_INVALID_ARGUMENT, "96");
  EXPECT_FAILS(hone_qmv_affine(x.data(), p, s, b, y.data(), 0, n, k, 4, 64),
               HONE_ERROR_INVALID_ARGUMENT, "rows=0");
  EXPECT_FAILS(hone_qmv_affine(x.data(), p, s, b, y.data(), rows, n, k, 2, 64),
               HONE_ERROR_INVALID_ARGUMENT, "bits=2");
}

TEST(CApiGemvBf16, JudgesArgumentsBeforeTheDevice) {
  alignas(16) static uint16_t x[64], w[64], y[64];
  EXPECT_FAILS(hone_gemv_bf16(nullptr, w, y, 1, 8, 8, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "x is NULL");
  EXPECT_FAILS(hone_gemv_bf16(x, w, nullptr, 1, 8, 8, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "y is NULL");
  if (cuda_usable())
    GTEST_SKIP() << "a CUDA device is present: shape and device errors are device-tested";
  char ops[256];
  ASSERT_EQ(hone_ops(ops, sizeof ops, nullptr), HONE_OK);
  if (std::string(ops).find("gemv.bf16") != std::string::npos) {
    EXPECT_FAILS(hone_gemv_bf16(x, w, y, 0, 8, 8, nullptr), HONE_ERROR_INVALID_ARGUMENT, "rows=0");
    EXPECT_FAILS(hone_gemv_bf16(x, w, y, 33, 8, 8, nullptr), HONE_ERROR_INVALID_ARGUMENT,
                 "rows=33");
    EXPECT_FAILS(hone_gemv_bf16(x, w, y, 1, 8, 12, nullptr), HONE_ERROR_INVALID_ARGUMENT, "k=12");
  }
  EXPECT_FAILS(hone_gemv_bf16(x, w, y, 1, 8, 8, nullptr), HONE_ERROR_NO_DEVICE, "CUDA");
}

TEST(CApiSiluMulBf16, ChecksOutAlignmentWithAndWithoutUp) {
  // Host buffers stand in for device pointers: every call below fails before it is read.
  alignas(16) static uint16_t gate[128], up[64], out[72];
  auto *out_off = reinterpret_cast<uint16_t *>(reinterpret_cast<char *>(out) + 2);
  EXPECT_FAILS(hone_silu_mul_bf16(gate, up, out_off, 1, 64, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "out=");
  // gate holding the fused [gate | up] rows (up NULL): out is still checked.
  EXPECT_FAILS(hone_silu_mul_bf16(gate, nullptr, out_off, 1, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "out=");
}

bool carries(const std::string &op_backend) {
  char ops[1024];
  EXPECT_EQ(hone_ops(ops, sizeof ops, nullptr), HONE_OK) << last();
  std::stringstream list(ops);
  for (std::string item; std::getline(list, item, ',');)
    if (item == op_backend)
      return true;
  return false;
}

TEST(CApiRopeKvAppendBf16, JudgesArgumentsBeforeTheDevice) {
  // Host buffers stand in for device pointers: every call below fails before it is read.
  alignas(16) static uint16_t q[4 * 128], kv[2 * 128], cache[8 * 16 * 2 * 128], bias[8 * 128];
  alignas(16) static int32_t positions[2], indptr[3], indices[2], last_len[2];
  const int32_t indptr_host[3] = {0, 1, 2}, last_host[2] = {1, 1};
  const auto *bias_off =
      reinterpret_cast<const uint16_t *>(reinterpret_cast<const char *>(bias) + 2);
  // batch 1, hq 4, hkv 2, head_dim 128, page_size 16, 8 pages.
  const auto call = [&](const void *k, const void *v, const void *b, const int32_t *ih,
                        int64_t num_pages, int64_t head_dim, int64_t page_size) {
    return hone_rope_kv_append_bf16(q, k, v, b, cache, cache, positions, indptr, indices, last_len,
                                    ih, last_host, 1, num_pages, 4, 2, head_dim, page_size, 0, 0, 0,
                                    10000.0, nullptr, nullptr);
  };
  EXPECT_FAILS(call(kv, nullptr, nullptr, indptr_host, 8, 128, 16), HONE_ERROR_INVALID_ARGUMENT,
               "v is NULL");
  EXPECT_FAILS(call(nullptr, kv, nullptr, indptr_host, 8, 128, 16), HONE_ERROR_INVALID_ARGUMENT,
               "k is NULL");
  EXPECT_FAILS(call(kv, kv, nullptr, nullptr, 8, 128, 16), HONE_ERROR_INVALID_ARGUMENT,
               "kv_indptr_host is NULL");
  EXPECT_FAILS(call(kv, kv, nullptr, indptr_host, 0, 128, 16), HONE_ERROR_INVALID_ARGUMENT,
               "num_pages=0");
  EXPECT_FAILS(call(kv, kv, bias_off, indptr_host, 8, 128, 16), HONE_ERROR_INVALID_ARGUMENT,
               "qkv_bias=");
  if (carries("rope:cuda")) {
    EXPECT_FAILS(call(kv, kv, bias, indptr_host, 8, 100, 16), HONE_ERROR_INVALID_ARGUMENT,
                 "head_dim=100");
    EXPECT_FAILS(call(kv, kv, bias, indptr_host, 8, 128, 24), HONE_ERROR_INVALID_ARGUMENT,
                 "page_size=24");
  }
  if (cuda_usable())
    GTEST_SKIP() << "a CUDA device is present: launches are device-tested";
  EXPECT_FAILS(call(kv, kv, bias, indptr_host, 8, 128, 16), HONE_ERROR_NO_DEVICE, "CUDA");
}

TEST(CApiQmvAffineBf16, JudgesArgumentsBeforeTheDevice) {
  // Host buffers stand in for device pointers: every call below fails before it is read.
  alignas(16) static uint16_t x[256], scales[64], biases[64], y[64];
  alignas(16) static uint32_t q[256];
  const auto *x_off = reinterpret_cast<const uint16_t *>(reinterpret_cast<const char *>(x) + 2);
  const auto *q_off = reinterpret_cast<const uint32_t *>(reinterpret_cast<const char *>(q) + 4);
  EXPECT_FAILS(hone_qmv_affine_bf16(nullptr, q, scales, biases, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "x is NULL");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, nullptr, scales, biases, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "q is NULL");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, nullptr, biases, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "scales is NULL");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, nullptr, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "biases is NULL");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, nullptr, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "y is NULL");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 1, 8, 64, 3, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "bits=3");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 1, 8, 64, 4, 48, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "group=48");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 1, 8, 100, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "k=100 is not a multiple of group=64");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 1, 0, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "n=0");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 0, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "rows=0");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 33, 8, 64, 8, 32, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "rows=33");
  EXPECT_FAILS(hone_qmv_affine_bf16(x_off, q, scales, biases, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "16-byte aligned");
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q_off, scales, biases, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "q=");
  if (cuda_usable())
    GTEST_SKIP() << "a CUDA device is present: launches are device-tested";
  EXPECT_FAILS(hone_qmv_affine_bf16(x, q, scales, biases, y, 1, 8, 64, 4, 64, nullptr),
               HONE_ERROR_NO_DEVICE, "CUDA");
}

TEST(CApiTune, QmvAffineResolvesToTheBackendPresentOrTheDtypeAsked) {
  const int64_t dims[] = {1, 64, 64, 4, 32};
  char pick[256];
  // "f32" is the CPU op's dtype: the CPU op, whatever the machine has.
  ASSERT_EQ(hone_tune("qmv.affine", dims, 5, "f32", 0, pick, sizeof pick, nullptr), HONE_OK)
      << last();
  const std::string cpu_pick = pick;
  EXPECT_EQ(cpu_pick.rfind("qmv.affine:", 0), 0u) << cpu_pick;
  EXPECT_NE(cpu_pick.find("rows_per_block="), std::string::npos) << cpu_pick;
  if (cuda_usable())
    GTEST_SKIP() << "a CUDA device is present: the default resolution is device-tested";
  // No device: the op's own dtype is the CPU op's, the same pick (now from the cache).
  ASSERT_EQ(hone_tune("qmv.affine", dims, 5, nullptr, 0, pick, sizeof pick, nullptr), HONE_OK)
      << last();
  EXPECT_EQ(std::string(pick), cpu_pick);
  if (carries("qmv.affine:cuda"))
    EXPECT_FAILS(hone_tune("qmv.affine", dims, 5, "bf16", 0, pick, sizeof pick, nullptr),
                 HONE_ERROR_NO_DEVICE, "qmv.affine");
  else
    EXPECT_FAILS(hone_tune("qmv.affine", dims, 5, "bf16", 0, pick, sizeof pick, nullptr),
                 HONE_ERROR_INVALID_ARGUMENT, "bf16");
  ASSERT_EQ(hone_cache_clear(), HONE_OK) << last();
}

TEST(CApiTune, RejectsUnknownOpsDtypesRanksAndShapes) {
  const int64_t dims[] = {1, 64, 64};
  char out[256];
  EXPECT_FAILS(hone_tune(nullptr, dims, 3, nullptr, 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "op is NULL");
  EXPECT_FAILS(hone_tune("gemv.f64", dims, 3, nullptr, 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "unknown op 'gemv.f64'");
  EXPECT_FAILS(hone_tune("gemv.f32", nullptr, 3, nullptr, 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_FAILS(hone_tune("gemv.f32", dims, 2, nullptr, 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "rank=2");
  EXPECT_FAILS(hone_tune("gemv.f32", dims, 3, "bf16", 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "bf16");
  EXPECT_FAILS(hone_tune("gemv.f32", dims, 3, "f64", 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "f64");
  const int64_t zero_rows[] = {0, 64, 64};
  EXPECT_FAILS(hone_tune("gemv.f32", zero_rows, 3, nullptr, 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "rows=0");
  const int64_t bad_group[] = {1, 64, 100, 4, 32};
  EXPECT_FAILS(hone_tune("qmv.affine", bad_group, 5, nullptr, 0, out, sizeof out, nullptr),
               HONE_ERROR_INVALID_ARGUMENT, "100");
  EXPECT_FALSE(fs::exists(cache_dir.path() / "tuning-cache.json")) << "bad input wrote the cache";
}

TEST(CApiTune, TunesRecordsAndThenReadsTheCache) {
  const int64_t dims[] = {1, 64, 64};
  char pick[256];
  size_t length = 0;
  ASSERT_EQ(hone_tune("gemv.f32", dims, 3, nullptr, 0, pick, sizeof pick, &length), HONE_OK)
      << last();
  EXPECT_EQ(std::string(pick).rfind("gemv.f32:", 0), 0u) << pick;
  EXPECT_EQ(length, std::string(pick).size());
  EXPECT_TRUE(fs::exists(cache_dir.path() / "tuning-cache.json"));
  char again[256];
  ASSERT_EQ(hone_tune("gemv.f32", dims, 3, "f32", 0, again, sizeof again, nullptr), HONE_OK)
      << last();
  EXPECT_STREQ(again, pick);
  char small[4];
  EXPECT_FAILS(hone_tune("gemv.f32", dims, 3, nullptr, 0, small, sizeof small, &length),
               HONE_ERROR_BUFFER_TOO_SMALL, "needs");
  EXPECT_EQ(length, std::string(pick).size());

  int32_t problems = -1;
  ASSERT_EQ(hone_cache_verify(&problems, nullptr, 0, nullptr), HONE_OK) << last();
  EXPECT_EQ(problems, 0);
  ASSERT_EQ(hone_cache_clear(), HONE_OK) << last();
  EXPECT_FALSE(fs::exists(cache_dir.path() / "tuning-cache.json"));
}

// An entry whose tactic this build cannot run is reported by hone_cache_verify and re-tuned
// by hone_tune, as a stale one is.
TEST(CApiTune, AnUnrunnableCachedTacticIsReportedAndRetuned) {
  const int64_t dims[] = {2, 64, 64};
  char pick[256];
  ASSERT_EQ(hone_tune("gemv.f32", dims, 3, nullptr, 0, pick, sizeof pick, nullptr), HONE_OK)
      << last();
  const fs::path file = cache_dir.path() / "tuning-cache.json";
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  std::string json = text.str();
  const std::string planted = "gemv.f32:rows_per_block=3,cols_per_block=4,k_unroll=8,threads=1";
  const std::string field = "\"tactic\": \"" + std::string(pick) + "\"";
  const size_t at = json.find(field);
  ASSERT_NE(at, std::string::npos) << json;
  json.replace(at, field.size(), "\"tactic\": \"" + planted + "\"");
  std::ofstream(file, std::ios::trunc) << json;

  int32_t problems = 0;
  char report[2048];
  ASSERT_EQ(hone_cache_verify(&problems, report, sizeof report, nullptr), HONE_OK) << last();
  EXPECT_EQ(problems, 1);
  EXPECT_EQ(std::string(report).rfind("unrunnable  gemv.f32@", 0), 0u) << report;
  char again[256];
  ASSERT_EQ(hone_tune("gemv.f32", dims, 3, nullptr, 0, again, sizeof again, nullptr), HONE_OK)
      << last();
  EXPECT_NE(std::string(again), planted);
  ASSERT_EQ(hone_cache_verify(&problems, nullptr, 0, nullptr), HONE_OK) << last();
  EXPECT_EQ(problems, 0);
  ASSERT_EQ(hone_cache_clear(), HONE_OK) << last();
}

TEST(CApiCache, PathVerifyCorruptAndClear) {
  char path[1024];
  ASSERT_EQ(hone_cache_path(path, sizeof path, nullptr), HONE_OK) << last();
  EXPECT_EQ(fs::path(path), cache_dir.path() / "tuning-cache.json");
  EXPECT_FAILS(hone_cache_path(nullptr, 8, nullptr), HONE_ERROR_INVALID_ARGUMENT, "out is NULL");
  char tiny[4];
  EXPECT_FAILS(hone_cache_path(tiny, sizeof tiny, nullptr), HONE_ERROR_BUFFER_TOO_SMALL,
               "capacity 4");

  std::ofstream(cache_dir.path() / "tuning-cache.json") << "{ not json";
  int32_t problems = 0;
  char report[2048];
  ASSERT_EQ(hone_cache_verify(&problems, report, sizeof report, nullptr), HONE_OK) << last();
  EXPECT_EQ(problems, 1);
  EXPECT_EQ(std::string(report).rfind("corrupt  ", 0), 0u) << report;
  EXPECT_FAILS(hone_cache_verify(&problems, nullptr, 16, nullptr), HONE_ERROR_INVALID_ARGUMENT,
               "out is NULL");
  ASSERT_EQ(hone_cache_clear(), HONE_OK) << last();
  EXPECT_FALSE(fs::exists(cache_dir.path() / "tuning-cache.json"));
  ASSERT_EQ(hone_cache_verify(&problems, report, sizeof report, nullptr), HONE_OK) << last();
  EXPECT_EQ(problems, 0);
  EXPECT_STREQ(report, "");
}

} // namespace

#include "cpu/cpu_backend.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hone/build_info.h"
#include "hone/log.h"

namespace hone::cpu {

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kFallbackLlcBytes = 32 * kMiB;
constexpr size_t kFallbackBudgetBytes = 1 * kGiB;
constexpr size_t kMaxBudgetBytes = 4 * kGiB;

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::optional<std::string> read_first_line(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line))
    return std::nullopt;
  return trim(line);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0)
      continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string model = trim(line.substr(colon + 1));
    if (!model.empty())
      return model;
  }
  return "unknown-cpu";
}

// [bytes] "32768K", "32M", "1G", "24226408 kB" or a plain byte count; nullopt when
// unparsable.
std::optional<size_t> parse_cache_size(const std::string &text) {
  size_t value = 0, i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
    value = value * 10 + static_cast<size_t>(text[i] - '0');
  if (i == 0)
    return std::nullopt;
  while (i < text.size() && text[i] == ' ')
    ++i;
  const char unit = i < text.size() ? static_cast<char>(std::toupper(text[i])) : 'B';
  switch (unit) {
  case 'B':
    return value;
  case 'K':
    return value << 10;
  case 'M':
    return value << 20;
  case 'G':
    return value << 30;
  default:
    return std::nullopt;
  }
}

// [bytes] size of the highest-level data or unified cache cpu0 sees; nullopt when sysfs
// does not say.
std::optional<size_t> last_level_cache_bytes() {
  const std::filesystem::path root = "/sys/devices/system/cpu/cpu0/cache";
  std::error_code ec;
  int best_level = -1;
  std::optional<size_t> best;
  for (const auto &entry : std::filesystem::directory_iterator(root, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0)
      continue;
    const auto type = read_first_line(entry.path() / "type");
    if (type && *type == "Instruction")
      continue;
    const auto level_text = read_first_line(entry.path() / "level");
    const auto size_text = read_first_line(entry.path() / "size");
    if (!level_text || !size_text)
      continue;
    const int level = std::atoi(level_text->c_str());
    const std::optional<size_t> size = parse_cache_size(*size_text);
    if (!size || *size == 0)
      continue;
    if (level > best_level || (level == best_level && *size > *best)) {
      best_level = level;
      best = size;
    }
  }
  return best;
}

std::string kernel_release() {
  utsname u{};
  if (uname(&u) != 0)
    return "unknown";
  return u.release;
}

// [bytes] MemAvailable of /proc/meminfo; else the free pages sysconf counts; nullopt when
// neither says.
std::optional<size_t> available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0)
      continue;
    // "MemAvailable:   24226408 kB"; the size parser reads the k suffix as KiB.
    const std::optional<size_t> available = parse_cache_size(trim(line.substr(13)));
    if (available && *available > 0)
      return available;
    break;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0)
    return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  return std::nullopt;
}

// [bytes] a quarter of the available memory, capped; a fallback when it is not known.
size_t memory_budget() {
  if (const std::optional<size_t> available = available_memory())
    return std::min(*available / 4, kMaxBudgetBytes);
  return kFallbackBudgetBytes;
}

class SteadyTimer final : public Timer {
public:
  SteadyTimer() : resolution_(measure_resolution()) {}
  void start() override { start_ = std::chrono::steady_clock::now(); }
  double stop() override {
    const auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(end - start_).count();
  }
  double resolution() const override { return resolution_; }

private:
  // [seconds] smallest nonzero difference of consecutive clock reads.
  static double measure_resolution() {
    using clock = std::chrono::steady_clock;
    clock::duration best = clock::duration::max();
    clock::time_point prev = clock::now();
    for (int i = 0; i < 100000; ++i) {
      const clock::time_point now = clock::now();
      if (now != prev)
        best = std::min(best, now - prev);
      prev = now;
    }
    if (best == clock::duration::max())
      best = clock::duration(1);
    return std::chrono::duration<double>(best).count();
  }

  std::chrono::steady_clock::time_point start_;
  double resolution_;
};

class CpuBackend final : public Backend {
public:
  CpuBackend() {
    info_.backend = "cpu";
    info_.model = cpu_model();
    if (std::optional<size_t> llc = last_level_cache_bytes()) {
      info_.llc_bytes = *llc;
    } else {
      info_.llc_bytes = kFallbackLlcBytes;
      info_.llc_known = false;
      log_warn("cpu backend: last-level cache size not found under "
               "/sys/devices/system/cpu/cpu0/cache; assuming 32 MiB");
    }
    info_.compute_units = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    info_.driver_version = kernel_release();
    info_.memory_budget_bytes = memory_budget();
  }

  const DeviceInfo &info() const override { return info_; }
  Timer &timer() override { return timer_; }
  void sync() override {}

  void flush_llc() override {
    if (flush_buffer_.empty())
      flush_buffer_.assign(2 * info_.llc_bytes / sizeof(uint64_t) + 1, 0);
    // Streams through twice the LLC: a write pass (lines become dirty and owned), then a
    // read pass; the sum is published so the reads are not elided.
    uint64_t stamp = ++flush_count_;
    for (uint64_t &v : flush_buffer_)
      v = stamp++;
    uint64_t sum = 0;
    for (const uint64_t v : flush_buffer_)
      sum += v;
    flush_sink_ = sum;
  }

  std::string method_id() const override { return "cpu.steady_clock.v2"; }
  std::optional<size_t> available_memory_bytes() const override { return available_memory(); }
  std::string kernel_build_id() const override { return HONE_CPU_KERNEL_BUILD; }

private:
  DeviceInfo info_;
  SteadyTimer timer_;
  std::vector<uint64_t> flush_buffer_; // 2 x LLC, allocated at the first flush
  uint64_t flush_count_ = 0;
  volatile uint64_t flush_sink_ = 0;
};

} // namespace

Backend &backend() {
  static CpuBackend instance;
  return instance;
}

} // namespace hone::cpu

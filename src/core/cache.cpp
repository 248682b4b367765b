#include "hone/cache.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <string>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/log.h"
#include "hone/settings.h"

namespace hone {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char *kFileName = "tuning-cache.json";

// "<what> <path>: <strerror(errno)>" for a failing system call.
[[noreturn]] void throw_errno(const std::string &what, const fs::path &path, int err) {
  HONE_RUNTIME_ERROR(what + " " + path.string() + ": " + std::strerror(err));
}

// ---------------------------------------------------------------------------------------
// JSON <-> entries

// Human-readable location of a field inside the file, e.g. `entries[3].metadata.driver`.
std::string at(const std::string &where, const char *name) {
  return where.empty() ? std::string(name) : where + "." + name;
}

const json &field(const json &object, const char *name, const std::string &where) {
  auto it = object.find(name);
  if (it == object.end())
    HONE_INVALID_ARGUMENT("tuning cache: missing field '" + at(where, name) + "'");
  return *it;
}

[[noreturn]] void wrong_type(const std::string &where, const char *name, const char *expected,
                             const json &value) {
  HONE_INVALID_ARGUMENT("tuning cache: field '" + at(where, name) + "' must be " + expected +
                        ", not " + value.type_name());
}

std::string string_field(const json &object, const char *name, const std::string &where) {
  const json &v = field(object, name, where);
  if (!v.is_string())
    wrong_type(where, name, "a string", v);
  return v.get<std::string>();
}

double number_field(const json &object, const char *name, const std::string &where) {
  const json &v = field(object, name, where);
  if (!v.is_number())
    wrong_type(where, name, "a number", v);
  return v.get<double>();
}

json metadata_to_json(const Metadata &m) {
  return json{{"hone_version", m.hone_version},
              {"kernel_build", m.kernel_build},
              {"backend", m.backend},
              {"runtime", m.runtime},
              {"driver", m.driver},
              {"method", m.method}};
}

Metadata metadata_from_json(const json &j, const std::string &where) {
  if (!j.is_object())
    HONE_INVALID_ARGUMENT("tuning cache: field '" + where + "' must be an object, not " +
                          j.type_name());
  Metadata m;
  m.hone_version = string_field(j, "hone_version", where);
  m.kernel_build = string_field(j, "kernel_build", where);
  m.backend = string_field(j, "backend", where);
  m.runtime = string_field(j, "runtime", where);
  m.driver = string_field(j, "driver", where);
  m.method = string_field(j, "method", where);
  return m;
}

json entry_to_json(const CacheEntry &e) {
  return json{{"key", e.key},           {"metadata", metadata_to_json(e.metadata)},
              {"tactic", e.tactic},     {"default_tactic", e.default_tactic},
              {"median_s", e.median_s}, {"default_s", e.default_s},
              {"ratio", e.ratio},       {"spread", e.spread},
              {"mode", e.mode},         {"date", e.date}};
}

CacheEntry entry_from_json(const json &j, const std::string &where) {
  if (!j.is_object())
    HONE_INVALID_ARGUMENT("tuning cache: '" + where + "' must be an object, not " + j.type_name());
  CacheEntry e;
  e.key = string_field(j, "key", where);
  e.metadata = metadata_from_json(field(j, "metadata", where), at(where, "metadata"));
  e.tactic = string_field(j, "tactic", where);
  e.default_tactic = string_field(j, "default_tactic", where);
  e.median_s = number_field(j, "median_s", where);
  e.default_s = number_field(j, "default_s", where);
  e.ratio = number_field(j, "ratio", where);
  e.spread = number_field(j, "spread", where);
  e.mode = string_field(j, "mode", where);
  e.date = string_field(j, "date", where);
  return e;
}

// ---------------------------------------------------------------------------------------
// Files

// Closes a descriptor on scope exit.
class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now, reporting the error (close can report a failed deferred write).
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

private:
  int fd_;
};

// Exclusive flock on `<cache path>.lock`, held for the lifetime of the object. The lock file
// is never removed: removing it would let two writers lock two different files.
class FileLock {
public:
  explicit FileLock(const fs::path &cache_path) : path_(cache_path.string() + ".lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw_errno("cannot open lock file", path_, errno);
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR)
        continue;
      const int err = errno;
      ::close(fd_);
      throw_errno("cannot lock", path_, err);
    }
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

private:
  fs::path path_;
  int fd_ = -1;
};

// What is on disk at a path.
struct DiskState {
  bool exists = false;
  bool corrupt = false; // read, and not a valid cache file
  std::string reason;   // why the file is corrupt
  std::string error;    // why the file could not be read (permissions, a directory); not corrupt
  std::map<std::string, CacheEntry> entries;
};

// Reads and parses the cache file. Never throws: a file that was read and failed to parse is
// reported as corrupt, one that could not be read (other than a missing one) as an error.
DiskState read_disk(const fs::path &path) {
  DiskState state;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // ENOTDIR: a directory on the way does not exist yet either (save() says why it cannot
    // create it).
    if (errno == ENOENT || errno == ENOTDIR)
      return state;
    state.exists = true;
    state.error = "cannot open tuning cache " + path.string() + ": " + std::strerror(errno);
    return state;
  }
  Fd file(fd);
  state.exists = true;
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      state.error = "cannot read tuning cache " + path.string() + ": " + std::strerror(errno);
      return state;
    }
    if (n == 0)
      break;
    text.append(buf, static_cast<size_t>(n));
  }
  try {
    state.entries = cache_from_json(text);
  } catch (const Error &e) {
    state.corrupt = true;
    state.reason = e.what();
  }
  return state;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

void fsync_directory(const fs::path &dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw_errno("cannot open directory", dir, errno);
  Fd d(fd);
  if (::fsync(fd) != 0)
    throw_errno("cannot fsync directory", dir, errno);
}

fs::path directory_of(const fs::path &path) {
  const fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// Moves a corrupt cache file aside as `<path>.corrupt-<UTC timestamp>` (plus `-<n>` when that
// name is taken), never overwriting an earlier one. REQUIRES: the cache lock is held, so no
// other writer races for the name.
fs::path keep_aside(const fs::path &path) {
  const std::string base = path.string() + ".corrupt-" + utc_timestamp();
  fs::path target = base;
  for (int n = 2; ::access(target.c_str(), F_OK) == 0; ++n)
    target = base + "-" + std::to_string(n);
  if (::rename(path.c_str(), target.c_str()) != 0)
    throw_errno("cannot keep corrupt cache file " + path.string() + " as", target, errno);
  return target;
}

// Writes `text` to `<path>.tmp.<pid>`, fsyncs it and renames it over `path`, then fsyncs the
// directory: a reader sees the old file or the new one, never a partial one.
void write_atomically(const fs::path &path, const std::string &text) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw_errno("cannot create", tmp, errno);
  Fd file(fd);
  auto fail = [&](const char *what) {
    const int err = errno;
    file.close();
    ::unlink(tmp.c_str());
    throw_errno(what, tmp, err);
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0)
    fail("cannot fsync");
  if (file.close() != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_errno("cannot close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_errno("cannot rename " + tmp.string() + " to", path, err);
  }
  fsync_directory(directory_of(path));
}

void make_directories(const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    HONE_RUNTIME_ERROR("cannot create cache directory " + dir.string() + ": " + ec.message());
}

} // namespace

// ---------------------------------------------------------------------------------------

std::string cache_to_json(const std::map<std::string, CacheEntry> &entries) {
  json list = json::array();
  for (const auto &[key, entry] : entries)
    list.push_back(entry_to_json(entry));
  const json doc{{"schema", kCacheSchema}, {"entries", std::move(list)}};
  // Invalid UTF-8 in a string (a device model, say) is replaced rather than thrown on.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::map<std::string, CacheEntry> cache_from_json(const std::string &text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception &e) {
    HONE_INVALID_ARGUMENT(std::string("tuning cache: not valid JSON: ") + e.what());
  }
  if (!doc.is_object())
    HONE_INVALID_ARGUMENT(std::string("tuning cache: the top level must be an object, not ") +
                          doc.type_name());
  const json &schema = field(doc, "schema", "");
  if (!schema.is_number_integer())
    wrong_type("", "schema", "an integer", schema);
  if (schema.get<long long>() != kCacheSchema)
    HONE_INVALID_ARGUMENT("tuning cache: schema " + schema.dump() + " is not supported (expected " +
                          std::to_string(kCacheSchema) + ")");
  const json &list = field(doc, "entries", "");
  if (!list.is_array())
    wrong_type("", "entries", "an array", list);
  std::map<std::string, CacheEntry> entries;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "entries[" + std::to_string(i) + "]";
    CacheEntry e = entry_from_json(list[i], where);
    const std::string key = e.key;
    if (!entries.emplace(key, std::move(e)).second)
      HONE_INVALID_ARGUMENT("tuning cache: " + where + ": duplicate key '" + key + "'");
  }
  return entries;
}

fs::path Cache::default_path() { return default_path(settings()); }

fs::path Cache::default_path(const Settings &settings) {
  if (!settings.cache_dir.empty())
    return fs::path(settings.cache_dir) / kFileName;
  if (!settings.xdg_cache_home.empty())
    return fs::path(settings.xdg_cache_home) / "hone" / kFileName;
  std::string home = settings.home;
  if (home.empty())
    if (const passwd *pw = ::getpwuid(::getuid()); pw && pw->pw_dir)
      home = pw->pw_dir;
  if (home.empty())
    HONE_RUNTIME_ERROR("cannot locate the tuning cache: HONE_CACHE_DIR, XDG_CACHE_HOME and HOME "
                       "are unset");
  return fs::path(home) / ".cache" / "hone" / kFileName;
}

Cache::Cache(fs::path path) : path_(std::move(path)) {}

void Cache::load() {
  DiskState disk = read_disk(path_);
  if (!disk.error.empty())
    HONE_RUNTIME_ERROR(disk.error + " (left as it is)");
  entries_ = std::move(disk.entries);
  for (const auto &[key, entry] : pending_)
    entries_[key] = entry;
  if (!disk.corrupt) {
    corrupt_ = false;
    corrupt_reason_.clear();
    return;
  }
  if (!corrupt_)
    log_warn("tuning cache " + path_.string() + " is unusable and is ignored (" + disk.reason +
             "); it will be kept as " + path_.filename().string() +
             ".corrupt-<timestamp> at the next save");
  corrupt_ = true;
  corrupt_reason_ = std::move(disk.reason);
}

const CacheEntry *Cache::find(const std::string &key, const Metadata &current) const {
  const CacheEntry *e = find_any(key);
  return e && e->metadata == current ? e : nullptr;
}

const CacheEntry *Cache::find_any(const std::string &key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void Cache::put(CacheEntry entry) {
  if (entry.key.empty())
    HONE_INVALID_ARGUMENT("tuning cache: an entry needs a key");
  for (double v : {entry.median_s, entry.default_s, entry.ratio, entry.spread})
    if (!std::isfinite(v))
      HONE_INVALID_ARGUMENT("tuning cache: entry '" + entry.key +
                            "' has a non-finite time, ratio or spread");
  entries_[entry.key] = entry;
  pending_[entry.key] = std::move(entry);
}

void Cache::save() {
  make_directories(directory_of(path_));
  FileLock lock(path_);
  DiskState disk = read_disk(path_);
  if (!disk.error.empty())
    HONE_RUNTIME_ERROR(disk.error + " (left as it is; nothing saved)");
  if (disk.corrupt) {
    // One warning per unusable file: load() has already warned when it saw it.
    const fs::path kept = keep_aside(path_);
    const std::string message = "tuning cache " + path_.string() + " is unusable (" + disk.reason +
                                "); kept it as " + kept.string();
    if (corrupt_)
      log_info(message);
    else
      log_warn(message);
  }
  std::map<std::string, CacheEntry> merged = std::move(disk.entries);
  for (auto &[key, entry] : pending_)
    merged[key] = entry;
  write_atomically(path_, cache_to_json(merged));
  entries_ = std::move(merged);
  pending_.clear();
  corrupt_ = false;
  corrupt_reason_.clear();
}

std::vector<VerifyItem> Cache::verify(const Metadata &current) const {
  std::vector<VerifyItem> items;
  if (corrupt_)
    items.push_back({"", "corrupt", corrupt_reason_});
  for (const auto &[key, entry] : entries_)
    if (std::optional<std::string> reason = stale_reason(entry.metadata, current))
      items.push_back({key, "stale", *reason});
  return items;
}

void Cache::clear() {
  const fs::path dir = directory_of(path_);
  entries_.clear();
  pending_.clear();
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return;
  FileLock lock(path_);
  const DiskState disk = read_disk(path_);
  if (!disk.error.empty())
    HONE_RUNTIME_ERROR(disk.error + " (left as it is)");
  // A corrupt file is kept aside rather than deleted: its contents are never lost.
  if (disk.corrupt) {
    keep_aside(path_);
  } else if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    throw_errno("cannot remove", path_, errno);
  }
  fsync_directory(dir);
  corrupt_ = false;
  corrupt_reason_.clear();
}

} // namespace hone

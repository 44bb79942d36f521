#include "engine/base/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <memory>

#include "engine/base/coding.h"
#include "engine/base/crash_points.h"
#include "engine/base/storage_faults.h"

namespace cairn {

// ---- CRC-32C (Castagnoli), slicing-by-8 ----

namespace {

constexpr uint32_t kCrc32cPoly = 0x82F63B78u;  // reflected 0x1EDC6F41

struct Crc32cTables {
  uint32_t t[8][256];
  constexpr Crc32cTables() : t{} {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? kCrc32cPoly : 0);
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
      for (int s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

constexpr Crc32cTables kCrc32c;

inline uint32_t Load32Le(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

uint32_t Crc32cPortable(std::string_view data, uint32_t crc) {
  const auto& t = kCrc32c.t;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo = Load32Le(p) ^ c;
    uint32_t hi = Load32Le(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAIRN_CRC32C_SSE42 1
namespace {

// SSE4.2's CRC32 instruction computes exactly CRC-32C, 8 bytes at a time: several times the
// table's speed (a changelog segment of tens of megabytes is checksummed when written and
// again when read).
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(std::string_view data, uint32_t crc) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, static_cast<unsigned char>(*p));
  return ~c32;
}

// Set during static initialization (until then false: the tables, as correct); the CPU's
// features are read first, whichever constructor runs before libgcc's.
const bool kHaveSse42 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}();

}  // namespace
#endif

uint32_t Crc32c(std::string_view data, uint32_t crc) {
#ifdef CAIRN_CRC32C_SSE42
  if (kHaveSse42) return Crc32cSse42(data, crc);
#endif
  return Crc32cPortable(data, crc);
}

// ---- Files and directories ----

namespace {

// An I/O error for `path`, whatever errno is (a failed write is never "not found").
Status WriteError(std::string_view what, const std::string& path, int err) {
  return Status::IOError(std::string(what) + " " + path + ": " + std::strerror(err));
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// At most this much per write(2). Measured on this machine's kernel (6.18, ext4): one 8.4 MB
// write of a changelog segment took 20-28 ms, the same bytes in 1 MiB writes 1.8 ms, and the
// fsync after them was faster too (3.1 against 5 ms).
constexpr size_t kMaxWriteBytes = size_t{1} << 20;

Status WriteAll(int fd, const std::string& path, std::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, std::min(left, kMaxWriteBytes));
    if (n < 0) {
      if (errno == EINTR) continue;
      return WriteError("cannot write", path, errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return Status::OK();
}

// Writes of a deferred-sync group (DeferredSyncs) this large or larger bypass the page cache.
constexpr size_t kDirectWriteMinBytes = size_t{1} << 20;
// O_DIRECT's alignment (of the buffer, the file offset and the length), enough for any
// logical block size up to the page size, and the size of the bounce buffer each thread keeps.
constexpr size_t kDirectAlign = 4096;
constexpr size_t kDirectChunkBytes = size_t{4} << 20;

// Writes `parts` (`total` bytes) through `fd`, opened with O_DIRECT, from an aligned buffer reused by the
// calling thread (a persister's), kDirectChunkBytes at a time; the last chunk is padded with
// zeros to the alignment and the file then cut to its length. OK with *unsupported set when
// the kernel refuses the first direct write (EINVAL: a file system or device with other rules)
// or no aligned buffer can be had, before any byte is written: the caller then writes through
// the page cache.
Status WriteAllDirect(int fd, const std::string& path, std::initializer_list<std::string_view> parts, size_t total,
                      bool* unsupported) {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  static thread_local std::unique_ptr<char, Free> buffer;
  if (buffer == nullptr) {
    void* p = nullptr;
    if (::posix_memalign(&p, kDirectAlign, kDirectChunkBytes) != 0) {
      *unsupported = true;
      return Status::OK();
    }
    buffer.reset(static_cast<char*>(p));
  }
  char* const buf = buffer.get();
  size_t filled = 0;
  bool first = true;
  auto flush = [&](size_t n) -> Status {
    const size_t padded = (n + kDirectAlign - 1) & ~(kDirectAlign - 1);
    std::memset(buf + n, 0, padded - n);
    for (size_t done = 0; done < padded;) {
      ssize_t w = ::write(fd, buf + done, padded - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EINVAL && first) {
          *unsupported = true;
          return Status::OK();
        }
        return WriteError("cannot write", path, errno);
      }
      first = false;
      done += static_cast<size_t>(w);
    }
    return Status::OK();
  };
  for (std::string_view part : parts) {
    while (!part.empty()) {
      const size_t n = std::min(part.size(), kDirectChunkBytes - filled);
      std::memcpy(buf + filled, part.data(), n);
      filled += n;
      part.remove_prefix(n);
      if (filled == kDirectChunkBytes) {
        CAIRN_RETURN_IF_ERROR(flush(filled));
        if (*unsupported) return Status::OK();
        filled = 0;
      }
    }
  }
  if (filled > 0) {
    CAIRN_RETURN_IF_ERROR(flush(filled));
    if (*unsupported) return Status::OK();
  }
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) return WriteError("cannot truncate", path, errno);
  return Status::OK();
}

// The directory fsync that makes a write's rename durable, seen by the storage-fault seam as
// "<dir>/." (e.g. chk-3/.: the commit of chk-3's _metadata), made now or by DeferredSyncs::SyncAll.
Status FsyncDirOfWrite(const std::string& dir) {
  CAIRN_RETURN_IF_ERROR(InjectStorageFault(dir + "/."));
  return FsyncDir(dir);
}

// Writes the concatenation of `parts` to path.tmp, fsyncs, renames over path, fsyncs the
// parent directory. Removes path.tmp on any failure before the rename. With `syncs`, both
// fsyncs are left to it (DeferredSyncs): the write's writeback is started instead, and the file
// stays open for its fsync.
Status WritePartsAtomically(const std::string& path, std::initializer_list<std::string_view> parts,
                            const AtomicWriteCrashPoints& crash_points, DeferredSyncs* syncs = nullptr) {
  const std::string tmp = path + ".tmp";
  LogDurabilityEvent("write", path);
  // A large file of a deferred-sync group (a checkpoint's changelog segment, channel state)
  // goes to the disk directly: it is written once and read only by a restore, and each
  // checkpoint's would otherwise take fresh page-cache pages. Measured on this VM: copying
  // the segments into the page cache cost up to a fifth of a large-state job's CPU at 100 ms
  // checkpoints, and their medians tripled (docs/benchmarks.md, eighth round).
  size_t total = 0;
  for (std::string_view part : parts) total += part.size();
  bool direct = syncs != nullptr && total >= kDirectWriteMinBytes;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0 && direct && errno == EINVAL) {  // a file system without O_DIRECT (tmpfs on older kernels)
    direct = false;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (fd < 0) return WriteError("cannot create", tmp, errno);
  Status s = InjectStorageFault(path);
  if (s.ok() && direct) {
    bool unsupported = false;
    s = WriteAllDirect(fd, tmp, parts, total, &unsupported);
    if (s.ok() && unsupported) {  // nothing written: through the page cache after all
      direct = false;
      if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT) != 0) s = WriteError("cannot write", tmp, errno);
    }
  }
  if (!direct) {
    for (std::string_view part : parts) {
      if (!s.ok()) break;
      s = WriteAll(fd, tmp, part);
    }
  }
  if (syncs != nullptr) {
    // Only a hint (the fsync in SyncAll reports any error): the disk starts on these bytes now,
    // beside the group's other writes. A direct write is on the disk already.
    if (s.ok() && !direct) (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  } else {
    if (s.ok() && ::fsync(fd) != 0) s = WriteError("cannot fsync", tmp, errno);
    if (::close(fd) != 0 && s.ok()) s = WriteError("cannot close", tmp, errno);
    fd = -1;
  }
  if (s.ok() && crash_points.tmp_written != nullptr) CAIRN_CRASH_POINT(crash_points.tmp_written);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = WriteError("cannot rename " + tmp + " to", path, errno);
  }
  if (!s.ok()) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  if (crash_points.renamed != nullptr) CAIRN_CRASH_POINT(crash_points.renamed);
  if (syncs != nullptr) {
    syncs->AddFile(fd, path);
    syncs->AddDir(ParentDir(path));
    return Status::OK();
  }
  return FsyncDirOfWrite(ParentDir(path));
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view data, const AtomicWriteCrashPoints& crash_points) {
  return WritePartsAtomically(path, {data}, crash_points);
}

Status ReadFile(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open", path, errno);
  std::string data;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) data.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Status::FromErrno("cannot read", path, err);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  *out = std::move(data);
  return Status::OK();
}

Status FsyncFile(const std::string& path) {
  LogDurabilityEvent("fsync", path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open", path, errno);
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return WriteError("cannot fsync", path, err);
  }
  ::close(fd);
  return Status::OK();
}

Status FsyncDir(const std::string& dir) {
  LogDurabilityEvent("fsync-dir", dir);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open directory", dir, errno);
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return WriteError("cannot fsync directory", dir, err);
  }
  ::close(fd);
  return Status::OK();
}

Status CreateDirs(const std::string& dir) {
  if (dir.empty()) return Status::InvalidArgument("cannot create a directory with an empty name");
  // Create each prefix ending before a '/', then the whole path.
  for (size_t i = 1; i <= dir.size(); i++) {
    if (i < dir.size() && dir[i] != '/') continue;
    if (dir[i - 1] == '/') continue;  // "a//b" or a trailing slash
    std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    int err = errno;
    if (err == EEXIST && IsDirectory(prefix)) continue;
    if (err == EEXIST) return Status::IOError("cannot create directory " + prefix + ": a file of that name exists");
    return WriteError("cannot create directory", prefix, err);
  }
  return Status::OK();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::IOError("cannot remove " + path + ": " + ec.message());
  }
  return Status::OK();
}

Status RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return Status::OK();
  int err = errno;
  if (err == EINVAL || err == ENOSYS || err == ENOTSUP) {
    // No RENAME_NOREPLACE here: link() never replaces either.
    if (::link(from.c_str(), to.c_str()) == 0) {
      if (::unlink(from.c_str()) != 0) return Status::FromErrno("cannot remove " + to + "'s old name", from, errno);
      return Status::OK();
    }
    err = errno;
  }
  if (err == EEXIST)
    return Status::IOError("cannot rename " + from + " to " + to + ": " + to + " already exists (it is never replaced)");
  return Status::FromErrno("cannot rename " + from + " to", to, err);
}

Status Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return Status::FromErrno("cannot rename " + from + " to", to, errno);
  return Status::OK();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status ListDir(const std::string& dir, std::vector<std::string>* names) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno("cannot list directory", dir, errno);
  std::vector<std::string> result;
  for (;;) {
    errno = 0;
    struct dirent* e = ::readdir(d);
    if (e == nullptr) {
      int err = errno;
      ::closedir(d);
      if (err != 0) return Status::FromErrno("cannot list directory", dir, err);
      break;
    }
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    result.emplace_back(e->d_name);
  }
  std::sort(result.begin(), result.end());
  *names = std::move(result);
  return Status::OK();
}

uint64_t DiskUsage(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  if (S_ISREG(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  if (!S_ISDIR(st.st_mode)) return 0;  // symlinks and special files are not followed
  std::vector<std::string> names;
  if (!ListDir(path, &names).ok()) return 0;
  uint64_t total = 0;
  for (const std::string& name : names) total += DiskUsage(path + "/" + name);
  return total;
}

// ---- Checksummed blob files ----

namespace {

void PutFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

Status Damaged(const std::string& path, const std::string& reason) {
  return Status::Corruption(path + ": damaged (" + reason + ")");
}

}  // namespace

Status WriteChecksummedFile(const std::string& path, std::string_view data) {
  return WriteChecksummedFile(path, data, nullptr);
}

Status WriteChecksummedFile(const std::string& path, std::string_view data, DeferredSyncs* syncs) {
  char footer[kBlobFooterSize];
  EncodeFixed64(footer, kBlobMagic);
  EncodeFixed64(footer + 8, data.size());
  PutFixed32(footer + 16, Crc32c(data));
  return WritePartsAtomically(path, {data, std::string_view(footer, sizeof footer)}, {}, syncs);
}

DeferredSyncs::~DeferredSyncs() {
  MutexLock l(&mu_);
  for (const File& f : files_) ::close(f.fd);
}

void DeferredSyncs::AddFile(int fd, const std::string& path) {
  MutexLock l(&mu_);
  files_.push_back(File{fd, path});
}

void DeferredSyncs::AddDir(const std::string& dir) {
  MutexLock l(&mu_);
  for (const std::string& d : dirs_)
    if (d == dir) return;
  dirs_.push_back(dir);
}

Status DeferredSyncs::SyncAll(size_t* files_synced) {
  std::vector<File> files;
  std::vector<std::string> dirs;
  {
    MutexLock l(&mu_);
    files.swap(files_);
    dirs.swap(dirs_);
  }
  Status s;
  size_t synced = 0;
  for (const File& f : files) {
    if (s.ok()) {
      LogDurabilityEvent("fsync", f.path);
      if (::fsync(f.fd) != 0) s = WriteError("cannot fsync", f.path, errno);
    }
    if (::close(f.fd) != 0 && s.ok()) s = WriteError("cannot close", f.path, errno);
    if (s.ok()) ++synced;
  }
  if (files_synced != nullptr) *files_synced = synced;
  CAIRN_RETURN_IF_ERROR(s);
  for (const std::string& dir : dirs) CAIRN_RETURN_IF_ERROR(FsyncDirOfWrite(dir));
  return Status::OK();
}

Status ReadChecksummedFile(const std::string& path, std::string* data) {
  std::string bytes;
  CAIRN_RETURN_IF_ERROR(ReadFile(path, &bytes));
  if (bytes.empty()) return Damaged(path, "empty file");
  if (bytes.size() < kBlobFooterSize) {
    return Damaged(path, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                             std::to_string(kBlobFooterSize) + "-byte footer");
  }
  const size_t data_size = bytes.size() - kBlobFooterSize;
  const char* footer = bytes.data() + data_size;
  if (GetFixed64(footer) != kBlobMagic) return Damaged(path, "no footer magic: truncated or not a Cairn blob");
  uint64_t length = GetFixed64(footer + 8);
  if (length != data_size) {
    return Damaged(path, "length mismatch: footer says " + std::to_string(length) + " bytes, file holds " +
                             std::to_string(data_size));
  }
  uint32_t crc = GetFixed32(footer + 16);
  if (Crc32c(std::string_view(bytes.data(), data_size)) != crc) return Damaged(path, "checksum mismatch");
  bytes.resize(data_size);
  *data = std::move(bytes);
  return Status::OK();
}

Status CheckUsableDir(const std::string& dir, const std::string& what) {
  if (dir.empty()) return Status::InvalidArgument(what + ": empty");
  // Each existing prefix must be a directory; the first missing one must be creatable.
  std::string parent = dir[0] == '/' ? "/" : ".";
  for (size_t i = 1; i <= dir.size(); i++) {
    if (i < dir.size() && dir[i] != '/') continue;
    if (dir[i - 1] == '/') continue;
    std::string prefix = dir.substr(0, i);
    struct stat st;
    if (::stat(prefix.c_str(), &st) != 0) {
      if (errno != ENOENT) return Status::InvalidArgument(what + ": cannot inspect " + prefix + ": " + std::strerror(errno));
      if (::access(parent.c_str(), W_OK | X_OK) != 0)
        return Status::InvalidArgument(what + ": cannot create " + prefix + ": " + parent + " is not writable");
      return Status::OK();
    }
    if (!S_ISDIR(st.st_mode))
      return Status::InvalidArgument(what + ": " + prefix + " exists and is not a directory");
    parent = prefix;
  }
  if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0)
    return Status::InvalidArgument(what + ": not writable: " + std::strerror(errno));
  return Status::OK();
}

}  // namespace cairn

// File-system helpers with explicit durability: every write that must survive a crash goes
// through here, and every failure comes back as a Status naming the path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/mutex.h"
#include "engine/base/status.h"

namespace cairn {

// CRC-32C (Castagnoli) of `data`, continuing from `crc` (0 to start). On x86-64 CPUs with
// SSE4.2 (checked at run time) by its CRC32 instruction, elsewhere by Crc32cPortable.
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);
// The same by tables (slicing-by-8), on any CPU: Crc32c's fallback, and what tests compare the
// instruction's results with.
uint32_t Crc32cPortable(std::string_view data, uint32_t crc = 0);

// Errors: a missing path is NotFound where that is what the caller asked about (reading,
// listing, fsyncing); every other failure, and every failure to write, is IOError. Messages
// name the path and carry strerror's text.

// Crash points (engine/base/crash_points.h) to reach between the steps of an atomic write; a null
// name is none. Used for the commit point, _metadata.
struct AtomicWriteCrashPoints {
  const char* tmp_written = nullptr;  // path.tmp written and fsynced, not yet renamed
  const char* renamed = nullptr;      // renamed over path, the directory not yet fsynced
};

// Fsyncs put off to one pass at the end of a group of writes. A checkpoint's persist writes
// several files into a few directories, and nothing reads them as committed before the group's
// last step (the checkpoint's _metadata). So a file written through it (WriteChecksummedFile
// with a DeferredSyncs) is renamed into place with its writeback only started, and SyncAll
// fsyncs the files, then each directory once, after its last change: the files' fsyncs share
// the journal commits that one fsync after each write would make one by one, and their data is
// already on its way to the disk. AddFile and AddDir are safe from several threads.
class DeferredSyncs {
 public:
  DeferredSyncs() = default;
  DeferredSyncs(const DeferredSyncs&) = delete;
  DeferredSyncs& operator=(const DeferredSyncs&) = delete;
  // Closes the files SyncAll did not (a group abandoned on an error), unsynced.
  ~DeferredSyncs();
  // `fd`, open for writing on the file now named `path`, is to be fsynced and closed by SyncAll
  // (or closed by the destructor): the DeferredSyncs owns it.
  void AddFile(int fd, const std::string& path) EXCLUDES(mu_);
  // `dir` is to be fsynced by SyncAll (once however often it is added).
  void AddDir(const std::string& dir) EXCLUDES(mu_);
  // Fsyncs each file added ("fsync <path>" in the durability log), in the order added, and
  // closes it; then each directory, in the order first added, each seen by the storage-fault
  // seam as "<dir>/." as a write's own directory fsync is. Stops syncing at the first failure
  // and returns it (every file is closed all the same); `files_synced`, when given, is set to
  // how many of the files, the first ones added, were fsynced. Afterwards both sets are empty.
  Status SyncAll(size_t* files_synced = nullptr) EXCLUDES(mu_);

 private:
  struct File {
    int fd;
    std::string path;
  };
  Mutex mu_;
  std::vector<File> files_ GUARDED_BY(mu_);
  std::vector<std::string> dirs_ GUARDED_BY(mu_);
};

// Writes `data` to `path.tmp`, fsyncs it, renames it over `path`, and fsyncs the directory.
// On failure `path` is unchanged, `path.tmp` is removed, and the result is IOError. Consults
// the storage-fault seam (engine/base/storage_faults.h) with `path`.
Status WriteFileAtomically(const std::string& path, std::string_view data,
                           const AtomicWriteCrashPoints& crash_points = {});
// Reads the whole file; NotFound when it does not exist.
Status ReadFile(const std::string& path, std::string* out);
Status FsyncFile(const std::string& path);
Status FsyncDir(const std::string& dir);
// Creates `dir` and its missing parents.
Status CreateDirs(const std::string& dir);
// Removes `path` and everything below it; a missing path is OK.
Status RemoveAll(const std::string& path);
Status Rename(const std::string& from, const std::string& to);
// Renames `from` to `to` unless `to` exists (renameat2 RENAME_NOREPLACE; where the file system
// does not support it, link + unlink, which also never replaces). An existing `to` is IOError
// "... already exists" and changes nothing.
Status RenameNoReplace(const std::string& from, const std::string& to);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
// Names (not paths) of the entries of `dir`, sorted, without "." and ".."; NotFound when `dir`
// does not exist.
Status ListDir(const std::string& dir, std::vector<std::string>* names);
// Total size in bytes of the regular files below `path` (hard links counted once per path;
// symlinks not followed); 0 for a missing path.
uint64_t DiskUsage(const std::string& path);

// Whether `dir` can be a directory this process writes into, checked before anything is created:
// each existing prefix of it is a directory, the first missing one can be created in its
// parent, and `dir` itself, if it exists, is readable, writable and searchable. On failure,
// InvalidArgument "<what>: <reason>" (e.g. "<what>: a/b exists and is not a directory").
Status CheckUsableDir(const std::string& dir, const std::string& what);

// A checksummed blob file: `data` followed by a 20-byte footer (kBlobMagic, the length of
// `data`, its CRC-32C; little-endian), written atomically. ReadChecksummedFile returns
// Corruption("<path>: damaged (<reason>)") when the file is empty or shorter than the footer,
// the magic is missing, the length is wrong, or the checksum does not match; NotFound naming
// the path when it does not exist. *data is set only on success.
inline constexpr uint64_t kBlobMagic = 0x31424c426e726961ull;  // "airnBLB1"
inline constexpr size_t kBlobFooterSize = 20;
Status WriteChecksummedFile(const std::string& path, std::string_view data);
// The same, except that neither the file's fsync nor its directory's is made here: its
// writeback is started (sync_file_range), and both fsyncs are added to `syncs`. The file is in
// place under its name on return, and durable there only after syncs->SyncAll(). A file of
// 1 MiB or more is written past the page cache (O_DIRECT, from a 4 MiB buffer each thread
// keeps), or through it where the file system refuses that.
Status WriteChecksummedFile(const std::string& path, std::string_view data, DeferredSyncs* syncs);
Status ReadChecksummedFile(const std::string& path, std::string* data);

}  // namespace cairn

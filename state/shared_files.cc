// Shared files: SHARED lists and their garbage collection.
#include "state/shared_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>

#include "engine/base/crash_points.h"
#include "engine/base/file_util.h"
#include "state/checkpoint_format.h"
#include "state/checkpoint_layout.h"

namespace cairn {

namespace fs = std::filesystem;

namespace {

std::mutex& SharedFilesMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

SharedFilesLock::~SharedFilesLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

Status SharedFilesLock::Acquire(const std::string& checkpoint_root) {
  std::unique_lock<std::mutex> held(SharedFilesMutex());
  const std::string path = SharedLockPath(checkpoint_root);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("cannot open lock file", path, errno);
  int r;
  do {
    r = ::flock(fd, LOCK_EX);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int e = errno;
    ::close(fd);
    return Status::FromErrno("cannot lock", path, e);
  }
  held_ = std::move(held);
  fd_ = fd;
  return Status::OK();
}

Status ReadSharedList(const std::string& keyed_dir, std::vector<SharedFileRef>* out, bool* incremental) {
  out->clear();
  const std::string file = keyed_dir + "/" + kSharedListFileName;
  if (!PathExists(file)) {
    *incremental = false;
    return Status::OK();
  }
  *incremental = true;
  std::string bytes;
  CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(file, &bytes));
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos) return Status::Corruption(file + ": damaged (unterminated line)");
    std::string line = bytes.substr(pos, nl - pos);
    pos = nl + 1;
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find('/', 0) < sp)
      return Status::Corruption(file + ": damaged (line '" + line + "')");
    std::string rel = line.substr(sp + 1);
    out->push_back(SharedFileRef{line.substr(0, sp), (fs::path(keyed_dir) / rel).lexically_normal().string()});
  }
  return Status::OK();
}

Status WriteSharedList(const std::string& keyed_dir, const std::vector<SharedFileRef>& refs, DeferredSyncs* syncs) {
  std::string text;
  for (const SharedFileRef& r : refs) {
    text += r.name;
    text += ' ';
    text += fs::path(r.path).lexically_relative(fs::path(keyed_dir)).string();
    text += '\n';
  }
  return WriteChecksummedFile(keyed_dir + "/" + kSharedListFileName, text, syncs);
}

Status CollectSharedGarbage(const std::string& checkpoint_root, uint64_t* deleted) {
  if (deleted != nullptr) *deleted = 0;
  const std::string shared = SharedDir(checkpoint_root);
  // No shared directory: nothing to collect (an upload creating it now is not collected).
  if (!IsDirectory(shared)) return Status::OK();
  SharedFilesLock lock;
  CAIRN_RETURN_IF_ERROR(lock.Acquire(checkpoint_root));
  // Every reference of every checkpoint on disk.
  std::set<std::string> referenced;
  std::vector<std::string> names;
  CAIRN_RETURN_IF_ERROR(ListDir(checkpoint_root, &names));
  for (const std::string& name : names) {
    CheckpointId id;
    if (!ParseCheckpointDirName(name, &id)) continue;
    const std::string chk = checkpoint_root + "/" + name;
    std::vector<std::string> subtasks;
    if (!ListDir(chk, &subtasks).ok()) continue;
    for (const std::string& st : subtasks) {
      const std::string keyed = chk + "/" + st + "/" + kKeyedStateDirName;
      std::vector<SharedFileRef> refs;
      bool incremental;
      Status s = ReadSharedList(keyed, &refs, &incremental);
      // A damaged list cannot say what it needs: keep everything rather than guess (the
      // damaged checkpoint is left for a human, as CheckpointStore leaves it).
      if (!s.ok()) return Status::OK();
      for (SharedFileRef& r : refs) referenced.insert(std::move(r.path));
    }
  }
  std::error_code ec;
  std::vector<std::string> dirs;
  for (fs::recursive_directory_iterator it(shared, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      dirs.push_back(it->path().string());
      continue;
    }
    const std::string p = it->path().lexically_normal().string();
    if (referenced.count(p) != 0) continue;
    if (::unlink(p.c_str()) != 0) return Status::FromErrno("cannot remove shared file", p, errno);
    CAIRN_CRASH_POINT("retention.shared");
    if (deleted != nullptr) ++*deleted;
  }
  if (ec) return Status::IOError("cannot list " + shared + ": " + ec.message());
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    std::error_code ec3;
    if (fs::is_empty(*it, ec3) && !ec3) fs::remove(*it, ec3);
  }
  return FsyncDir(shared);
}

}  // namespace cairn

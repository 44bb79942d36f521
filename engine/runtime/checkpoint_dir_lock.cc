#include "engine/runtime/checkpoint_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "state/checkpoint_layout.h"

namespace cairn {

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) {
    if (created_ && !owned_) unlink(path_.c_str());
    close(fd_);
  }
}

Status CheckpointDirLock::Acquire(const std::string& dir) {
  path_ = LockPath(dir);
  fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0 && errno == ENOENT) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    created_ = fd_ >= 0;
    if (fd_ < 0 && errno == EEXIST) fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd_ < 0) return Status::FromErrno("cannot open lock file", path_, errno);
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0)
    return Status::InvalidArgument("checkpoint directory " + dir +
                                   " is in use by another running job (" + path_ + " is locked)");
  return Status::OK();
}

}  // namespace cairn

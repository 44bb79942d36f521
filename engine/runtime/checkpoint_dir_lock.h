// CheckpointDirLock is a run's hold on checkpoint.dir: flock() on <dir>/_lock, kept for the
// lifetime of the object, so that one job at a time uses the directory.
//
// Contract: Acquire fails with InvalidArgument naming the directory when another process
// holds the lock, and with the errno's Status when the lock file cannot be opened. A lock file
// that Acquire created is removed again by the destructor unless set_owned() was called: a run
// that fails before it owns the directory leaves nothing behind. Not thread-safe.
#pragma once

#include <string>

#include "engine/base/status.h"

namespace cairn {

class CheckpointDirLock {
 public:
  CheckpointDirLock() = default;
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

  // Takes the lock of `dir`, which must exist; once per object.
  Status Acquire(const std::string& dir);
  bool held() const { return fd_ >= 0; }
  // The job owns the directory from now on: the lock file stays.
  void set_owned() { owned_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  bool owned_ = false;
};

}  // namespace cairn

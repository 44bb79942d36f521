// Shared files of incremental keyed-state checkpoints (Flink's `shared/` directory): an SST
// file of a subtask's working RocksDB is uploaded once into <checkpoint.dir>/shared/<op>-<subtask>/
// (hard link, or copy across file systems) and every checkpoint whose state contains it lists it
// in its keyed snapshot's SHARED file instead of holding a copy.
//
// SHARED (a checksummed blob, WriteChecksummedFile): one line per referenced file,
// "<name in the database> <path relative to the keyed snapshot directory>".
//
// Contract: a shared file is written and fsynced before the checkpoint that first references
// it acknowledges, hence before its _metadata commits. A shared file is deleted only by
// CollectSharedGarbage, when no SHARED file of any chk-* directory still on disk (complete or
// not: a checkpoint being written counts) references it; the reference counts are rebuilt
// from the checkpoints on disk at every collection, so they survive restarts and restores.
// Uploading (write SHARED, then make sure every listed file exists) and collecting hold
// SharedFilesLock, so a collection never deletes a file a checkpoint being written lists: it
// serializes the threads of one process and, with flock() on <checkpoint.dir>/_shared_lock,
// the processes of one checkpoint directory (a cluster job's workers upload into the directory
// the coordinator's process collects).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/file_util.h"
#include "engine/base/status.h"

namespace cairn {

// The lock of a checkpoint directory's shared files: a mutex within this process, then an
// exclusive flock() on <checkpoint.dir>/_shared_lock (SharedLockPath, created when missing,
// never removed; opened read-write, so NFS's emulation of flock() by byte-range locks works
// too) across processes. The mutex is not redundant: locally, flock() on two descriptors of
// one process would exclude its threads too, but NFS's byte-range locks belong to the process
// and would not. Acquire() parks until both are held; the destructor releases them. A failure
// (the file cannot be opened or locked) holds nothing.
class SharedFilesLock {
 public:
  SharedFilesLock() = default;
  ~SharedFilesLock();
  SharedFilesLock(const SharedFilesLock&) = delete;
  SharedFilesLock& operator=(const SharedFilesLock&) = delete;

  // `checkpoint_root` (checkpoint.dir) must exist.
  Status Acquire(const std::string& checkpoint_root);

 private:
  std::unique_lock<std::mutex> held_;
  int fd_ = -1;
};

// One referenced file: its name in the database (e.g. "000012.sst") and its absolute path.
struct SharedFileRef {
  std::string name;
  std::string path;
};

// The files the keyed snapshot at `keyed_dir` references; *incremental false (and *out empty)
// when it has no SHARED file (a full snapshot, every file inside `keyed_dir`).
Status ReadSharedList(const std::string& keyed_dir, std::vector<SharedFileRef>* out, bool* incremental);
// Writes SHARED into `keyed_dir` (atomically; its fsync and `keyed_dir`'s added to `syncs` when
// it is non-null, else made here).
Status WriteSharedList(const std::string& keyed_dir, const std::vector<SharedFileRef>& refs,
                       DeferredSyncs* syncs = nullptr);

// Deletes every file below <checkpoint_root>/shared that no SHARED file of a chk-* directory of
// `checkpoint_root` references, and the directories left empty. *deleted: files removed. When
// a SHARED file does not read back, nothing is deleted (and the result is OK).
Status CollectSharedGarbage(const std::string& checkpoint_root, uint64_t* deleted = nullptr);

}  // namespace cairn

// Storage faults: the one seam through which tests make checkpoint writes fail or stall, to
// prove that a failed checkpoint is declined and cleaned up, that the job tolerates up to
// checkpoint.tolerable_failures of them and then fails naming the reason, and that a slow
// write expires its checkpoint (checkpoint.timeout).
//
// Set CAIRN_STORAGE_FAULT=<kind>:<path-substring>:<after-n>[:<count>]:
//   kind            enospc: the write fails with ENOSPC ("No space left on device");
//                   eio: the write fails with EIO ("Input/output error");
//                   slow=<ms>: the write stalls for <ms> milliseconds, then goes on.
//   path-substring  only writes whose path contains it are counted (e.g. _metadata,
//                   operator.state, channel.state, keyed, chk-3/); it cannot contain ':'.
//   after-n         the first <after-n> matching writes go through untouched;
//   count           the next <count> matching writes get the fault (default 1; `all`: every one).
//
// Consulted by every checkpoint write: WriteFileAtomically and WriteChecksummedFile (the
// _metadata, operator.state and channel.state files; the path is the final one, not .tmp) and
// the snapshot persister before it hands keyed state to RocksDB (<chk>/<op>-<i>/keyed), since
// RocksDB's own writes cannot be reached. A failed write leaves what a real one would: the
// .tmp file is removed, nothing is renamed. When the variable is unset a call costs one branch.
#pragma once

#include <string>

#include "engine/base/status.h"

namespace cairn {

// Reads CAIRN_STORAGE_FAULT. Returns false (and fills *error) when it is malformed. Called once
// at start-up, before any thread starts.
bool InitStorageFaults(std::string* error);

namespace internal {
extern bool storage_faults_armed;
Status InjectStorageFaultSlow(const std::string& path);
}  // namespace internal

// The fault configured for this write of `path`, if any: IOError naming the path for enospc and
// eio; OK after sleeping for slow; OK when no fault applies. Thread-safe.
inline Status InjectStorageFault(const std::string& path) {
  if (__builtin_expect(!internal::storage_faults_armed, 1)) return Status::OK();
  return internal::InjectStorageFaultSlow(path);
}

// The durability log, a test hook: with CAIRN_DURABILITY_LOG=<file> set (read by
// InitStorageFaults), every fsync of a file ("fsync <path>") or directory ("fsync-dir <path>"),
// every start of an atomic checkpoint write ("write <path>"; its own fsync, made before its
// rename, is not logged, one left to DeferredSyncs is, as "fsync <path>"), every sink commit
// ("commit <in-progress path> <committed path>"), every removal of a checkpoint's _metadata or
// directory ("remove <path>") and every checkpoint the persister is told to skip ("abort <id>") is
// appended as one line, in the order they happen (one write(2) per line, O_APPEND). Tests
// check durability orderings with it (docs/faults.md). Unset: one branch per call.
namespace internal {
extern int durability_log_fd;
void LogDurabilityEventSlow(const char* event, const std::string& path);
}  // namespace internal
inline void LogDurabilityEvent(const char* event, const std::string& path) {
  if (__builtin_expect(internal::durability_log_fd < 0, 1)) return;
  internal::LogDurabilityEventSlow(event, path);
}

}  // namespace cairn

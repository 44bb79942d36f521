// The paths of a checkpoint directory, one function per kind of file (as LevelDB's
// filename.h): nothing else in Cairn builds a checkpoint path by hand. The layout itself, and
// what each file holds, is described in state/checkpoint_format.h and docs/checkpoints.md.
//
// `dir` is checkpoint.dir; `chk` a checkpoint's directory (CheckpointPath). Paths a checkpoint's
// _metadata records for its subtasks are relative to `chk` (the *RelPath functions), so that a
// checkpoint directory can be moved as a whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/base/ids.h"

namespace cairn {

// <dir>/_lock: flock()ed by the running job.
std::string LockPath(const std::string& dir);
// <dir>/_superseded: the ranges of ids that may no longer be restored.
std::string SupersededPath(const std::string& dir);
// <dir>/_failed: the recent failed checkpoints, one line each (CheckpointStore::RecordFailure).
std::string FailedPath(const std::string& dir);
// <dir>/_work: the working RocksDBs of running jobs; <dir>/_work/run-<pid>: this process's.
std::string WorkRoot(const std::string& dir);
std::string WorkDir(const std::string& dir, int64_t pid);
// <work>/<op>-<subtask>: one subtask's working RocksDB inside a WorkDir.
std::string WorkingStatePath(const std::string& work_dir, const std::string& op, uint32_t subtask);

// <dir>/shared: the files incremental keyed-state checkpoints share (state/shared_files.h); a
// subtask uploads into <dir>/shared/<op>-<subtask> (the name of its working directory).
std::string SharedDir(const std::string& dir);
// <dir>/_shared_lock: flock()ed around writing a SHARED list with its files and around a
// collection of shared/, across processes (SharedFilesLock, state/shared_files.h).
std::string SharedLockPath(const std::string& dir);

// "chk-<id>", and <dir>/chk-<id>.
std::string CheckpointDirName(CheckpointId id);
std::string CheckpointPath(const std::string& dir, CheckpointId id);
// Parses "chk-<id>" with <id> in canonical decimal (no sign, no leading zeros).
bool ParseCheckpointDirName(std::string_view name, CheckpointId* id);
// <chk>/_metadata: the commit point.
std::string MetadataPath(const std::string& chk);

// "<op>-<subtask>": a subtask's state directory inside a checkpoint, and the files in it.
std::string SubtaskStateRelPath(const std::string& op, uint32_t subtask);
std::string KeyedStateRelPath(const std::string& op, uint32_t subtask);      // .../keyed
std::string OperatorStateRelPath(const std::string& op, uint32_t subtask);   // .../operator.state
std::string ListStateRelPath(const std::string& op, uint32_t subtask);       // .../list.state
std::string ChannelStateRelPath(const std::string& op, uint32_t subtask);    // .../channel.state
// <chk>/<rel>: a path _metadata records, made absolute.
std::string InCheckpoint(const std::string& chk, const std::string& rel);

}  // namespace cairn

// Savepoints: checkpoints the user owns (docs/checkpoints.md, "Savepoints"). A savepoint is a
// completed checkpoint copied into its own directory <target>/savepoint-<id>-<time>, where
// <time> is the trigger time in UTC (YYYYMMDDTHHMMSSZ):
//   - self-contained: every file its state needs is inside it. The shared SST files an
//     incremental keyed snapshot references (state/shared_files.h) are copied in under their
//     names and its SHARED list is left out, so each keyed snapshot is a full one (a changelog
//     checkpoint's is rewritten as one database, its segments applied); nothing
//     refers to checkpoint.dir, and the directory can be moved or copied anywhere;
//   - its _metadata says `kind savepoint` and is written last (the commit point, as for a
//     checkpoint); a directory without it is an unfinished savepoint and is never restored;
//   - never removed by Cairn: retention and shared-file collection only look at chk-<id>
//     directories of checkpoint.dir;
//   - restored as any checkpoint (`cairn run JOB --restore <savepoint dir>`), also at another
//     parallelism (the state is redistributed by key group, as for checkpoints).
#pragma once

#include <string>

#include "engine/base/status.h"
#include "state/checkpoint_metadata.h"

namespace cairn {

// "savepoint-<id>-<YYYYMMDDTHHMMSSZ>" for a checkpoint triggered at `trigger_time_ms`.
std::string SavepointDirName(CheckpointId id, int64_t trigger_time_ms);

// Copies the completed checkpoint `chk_dir` (whose metadata is `m`) into a new directory
// below `target_dir` (created when missing) and commits it; *path is the savepoint's
// directory. On failure the partial copy is removed and nothing else changes.
Status WriteSavepoint(const std::string& chk_dir, const CheckpointMetadata& m, const std::string& target_dir,
                      std::string* path);

}  // namespace cairn

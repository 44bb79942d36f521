// CheckpointStore is the directory of a job's checkpoints (checkpoint.dir): it finds completed
// checkpoints, resolves what `--restore` names, removes left-overs, and applies retention.
//
// Contract: only chk-<id> directories whose _metadata reads back intact count as completed.
// Listing, resolving and reading never modify anything; RemoveIncomplete and Retain are called
// only by a job that holds the directory's lock, after its input was validated.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "state/checkpoint_metadata.h"

namespace cairn {

struct CompletedCheckpoint {
  std::string path;  // the chk-<id> directory
  CheckpointMetadata metadata;
};

// A checkpoint (or savepoint) that failed, as CheckpointStore keeps it for `cairn checkpoints`.
struct FailedCheckpoint {
  CheckpointId id = 0;
  std::string kind = "checkpoint";  // or "savepoint"
  int64_t trigger_time_ms = 0;      // wall clock, ms since the epoch
  int64_t duration_ms = 0;          // trigger to failure
  std::string reason;               // one line
};

class CheckpointStore {
 public:
  // How many failed checkpoints RecordFailure keeps (the newest).
  static constexpr size_t kFailedHistory = 100;
  explicit CheckpointStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  std::string CheckpointPath(CheckpointId id) const;
  // Completed checkpoints, oldest first (by id). A missing directory is an empty list.
  // Incomplete checkpoints (no _metadata) are ignored. Damaged ones (Corruption, including
  // metadata whose id differs from the directory's) are skipped; their errors are appended to
  // *skipped when it is non-null. Any other error reading a _metadata fails the whole call.
  // Superseded checkpoints (see Supersede) are not listed either; their reasons go to
  // *superseded when it is non-null.
  Status ListCompleted(std::vector<CompletedCheckpoint>* out, std::vector<Status>* skipped = nullptr,
                       std::vector<Status>* superseded = nullptr) const;
  // The newest completed checkpoint; NotFound when there is none.
  Status Latest(CompletedCheckpoint* out) const;
  // The largest id of any chk-<id> entry (complete or not, even a stray file, so that the next
  // id never collides) or of any superseded range, 0 when none or when the directory cannot be
  // listed.
  CheckpointId MaxId() const;
  // `path` is a chk-<id> directory or its _metadata file. NotFound / Corruption name the path;
  // any other existing file is InvalidArgument. A directory named chk-<id> must hold the
  // metadata of checkpoint <id>.
  static Status Resolve(const std::string& path, CompletedCheckpoint* out);

  // Removes chk-<id> directories without _metadata, and all of _work/ (the caller holds the
  // lock, so it is left over from dead runs). Damaged checkpoints (a _metadata that does not
  // read back) are left for a human. A missing directory is OK. Then removes the shared files
  // no checkpoint on disk references (CollectSharedGarbage, state/shared_files.h).
  Status RemoveIncomplete() const;
  // Keeps the newest `retain` completed checkpoints, removing older ones; incomplete and
  // damaged ones are never touched. Each removal deletes _metadata first, so a crash half-way
  // leaves an incomplete checkpoint, never a complete-looking one with missing state.
  // REQUIRES: retain >= 1 (0 is InvalidArgument and removes nothing). Then removes the shared
  // files of incremental keyed state that no checkpoint left on disk references, when there
  // can be any: on this store's first call, and after it removed a checkpoint or recorded a
  // failure (RecordFailure) since the last collection. With no more `chk-<id>` directories than
  // `retain` and nothing superseded, it reads no _metadata at all: its cost does not grow with
  // the number of checkpoints kept.
  // A superseded checkpoint (see Supersede) is removed the same way once `retain` completed
  // checkpoints newer than it exist (so never before the run that superseded it has its own).
  // Only checkpoints with ids <= `newest` are counted, kept or removed: a running job passes
  // the newest it completed, since a newer directory may be one whose commit is being written
  // or taken back (CheckpointCoordinator) while retention runs beside it (CheckpointCleaner).
  Status Retain(uint32_t retain, CheckpointId newest = kNoNewest) const;
  static constexpr CheckpointId kNoNewest = ~CheckpointId{0};

  // Tells the next Retain to collect shared files: the caller removed (part of) a checkpoint
  // directory itself, e.g. what a failed checkpoint's late persist wrote.
  void MarkGarbagePossible() const { garbage_possible_.store(true); }

  // Records (durably: _superseded is rewritten atomically) that the checkpoints with ids in
  // [first, last] may no longer be restored: a restore of an older checkpoint abandoned them
  // (the output they committed was set aside), or a `--fresh` start did. They stay on disk,
  // unlisted, until Retain removes them. `reason` is one line of text. The caller holds the lock.
  Status Supersede(CheckpointId first, CheckpointId last, const std::string& reason) const;
  // Whether checkpoint `id` is superseded; *reason says by what. Corruption when _superseded
  // does not parse.
  Status IsSuperseded(CheckpointId id, bool* superseded, std::string* reason = nullptr) const;

  // Adds `f` to _failed, a history for `cairn checkpoints` that no restore reads: one line
  // each, "<id>\t<kind>\t<trigger_time_ms>\t<duration_ms>\t<reason>", the newest kFailedHistory
  // kept; the file is rewritten atomically. The caller holds the lock. A reason's newlines and
  // tabs become spaces.
  Status RecordFailure(const FailedCheckpoint& f) const;
  // The failures _failed holds, oldest first; a line a crash tore is skipped. A missing file is
  // an empty list.
  Status ListFailed(std::vector<FailedCheckpoint>* out) const;

 private:
  struct SupersededRange {
    CheckpointId first, last;
    std::string reason;
  };
  Status ReadSuperseded(std::vector<SupersededRange>* out) const;
  // Retain's removals: superseded checkpoints with `retain` completed ones newer, then the
  // oldest completed ones beyond `retain`. `names` lists dir_. *removed once any was started.
  Status RemoveBeyond(uint32_t retain, CheckpointId newest, const std::vector<SupersededRange>& ranges,
                      const std::vector<std::string>& names, bool* removed) const;

  const std::string dir_;
  // Whether shared files may have lost their last reference since the last collection.
  mutable std::atomic<bool> garbage_possible_{true};
};

}  // namespace cairn

// CheckpointStore is the directory of a job's checkpoints (checkpoint.dir): it finds completed
// checkpoints, resolves what `--restore` names, removes left-overs, and applies retention.
//
// Contract: only chk-<id> directories whose _metadata reads back intact count as completed.
// Listing, resolving and reading never modify anything; RemoveIncomplete and Retain are called
// only by a job that holds the directory's lock, after its input was validated.
#pragma once

#include <string>
#include <vector>

#include "engine/status.h"
#include "state/checkpoint_metadata.h"

namespace cairn {

struct CompletedCheckpoint {
  std::string path;  // the chk-<id> directory
  CheckpointMetadata metadata;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  std::string CheckpointPath(CheckpointId id) const;
  // Completed checkpoints, oldest first. A missing directory is an empty list. Damaged
  // checkpoints are skipped; their errors are appended to *skipped when it is non-null.
  Status ListCompleted(std::vector<CompletedCheckpoint>* out, std::vector<Status>* skipped = nullptr) const;
  // The newest completed checkpoint; NotFound when there is none.
  Status Latest(CompletedCheckpoint* out) const;
  // The largest id of any chk-<id> directory (complete or not), 0 when none.
  CheckpointId MaxId() const;
  // `path` is a chk-<id> directory or its _metadata file. NotFound / Corruption name the path.
  static Status Resolve(const std::string& path, CompletedCheckpoint* out);

  // Removes chk-<id> directories without _metadata, and _work/ leftovers of dead runs.
  Status RemoveIncomplete() const;
  // Keeps the newest `retain` completed checkpoints, removing older ones.
  Status Retain(uint32_t retain) const;

 private:
  const std::string dir_;
};

}  // namespace cairn

// The messages of the checkpoint protocol that are not stream elements: what a task hands to
// the snapshot persister (a PersistJob), and what goes back to the coordinator (a TaskAck).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint/channel_state_recorder.h"
#include "engine/checkpoint/subtask_checkpoint_mode.h"
#include "engine/base/key_groups.h"
#include "engine/base/status.h"
#include "engine/dataflow/stream_element.h"
#include "state/checkpoint_metadata.h"
#include "state/keyed_state.h"
#include "state/state_backend.h"

namespace cairn {

// A stateful subtask's StateStore, plus the changes not yet written to it (a checkpoint that
// failed after TakeDelta leaves them here for the next one). Touched only by the persister
// thread that serves the owning task.
struct KeyedStore {
  std::unique_ptr<StateStore> store;
  std::unique_ptr<StateDelta> unwritten;
};

// The asynchronous part of one operator's snapshot.
struct SnapshotPart {
  SubtaskStateHandle handle;            // ids and ranges; paths and sizes are filled in by the persister
  std::string operator_state;           // written to operator.state when non-empty
  std::string list_state;               // written to list.state when non-empty (OperatorStateStore::Snapshot)
  std::function<Status()> async_part;   // the operator's own async work, or empty
  std::unique_ptr<StateDelta> delta;    // keyed operators only
  KeyedStore* keyed = nullptr;          // keyed operators only
};

struct PersistJob {
  CheckpointId id = 0;
  std::string chk_dir;     // where the checkpoint's files go
  int task = 0;
  Status sync_status;      // not OK: persist the deltas only, then decline
  int64_t alignment_ms = 0;
  int64_t sync_ms = 0;
  std::vector<SnapshotPart> parts;        // parts[0] is the chain head
  SubtaskCheckpointMode mode = SubtaskCheckpointMode::kAligned;  // how this subtask took it
  std::unique_ptr<ChannelStateRecords> channel_state;  // unaligned: the head's input channels
  std::vector<RebalanceCount> rebalance_counts;  // Mattern's counts of the load-balanced edges
};

// One channel's in-flight records as read back from a checkpoint.
struct RestoredChannel {
  std::string name;  // "<producer op>[i]-><consumer op>[j]"
  SchemaRef schema;  // of the records (the producer's)
  RecordBatch records;
};

// Encodes / decodes channel state as stored in channel.state (inside a checksummed blob):
// a count of channels, then per channel its name, its schema, the record count, and the
// records (engine/dataflow/record_codec.h). Decode returns false when the bytes are malformed.
std::string EncodeChannelState(const ChannelStateRecords& c);
bool DecodeChannelState(std::string_view bytes, std::vector<RestoredChannel>* out);

// A task's answer to a checkpoint: its state handles, or why it declined.
struct TaskAck {
  CheckpointId id = 0;
  int task = 0;
  Status status;
  std::vector<SubtaskStateHandle> handles;
  SubtaskCheckpointMode mode = SubtaskCheckpointMode::kAligned;  // how this subtask took it
  // Per load-balanced edge this subtask produces or consumes: its Mattern counts (the
  // coordinator completes the checkpoint only when, summed over the edge, sent == received).
  std::vector<RebalanceCount> rebalance_counts;
};

}  // namespace cairn

// SubtaskCheckpointer carries out one subtask's part of every checkpoint, in order (Flink's
// SubtaskCheckpointCoordinator): forward the barrier downstream, snapshot the chain synchronously
// (operator state and keyed-state deltas, through the task's SnapshotChainFn), then hand the
// PersistJob to the SnapshotPersister, at once or, when the checkpoint's channel state is being
// recorded, once it is complete. Jobs reach the persister in checkpoint order, so that a
// subtask's deltas reach its RocksDB in order.
//
// The barrier is forwarded before the snapshot, and no record is processed in between, so both
// describe the same point of the stream: everything before the barrier is already emitted (or
// has its place in the output channels). An unaligned (or switched) checkpoint's barrier goes on
// the priority lanes; an aligned one on the data lanes, and, with an aligned timeout, is also
// announced on the priority lanes.
//
// Contract: task thread only. The output gate and the persister outlive the checkpointer; the
// persister may be null for a subtask that never takes a checkpoint.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "engine/checkpoint/channel_state_recorder.h"
#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/checkpoint/subtask_checkpoint_mode.h"
#include "engine/dataflow/output_gate.h"

namespace cairn {

class SnapshotPersister;

class SubtaskCheckpointer {
 public:
  // The synchronous snapshot of the subtask's chain for checkpoint `b`: appends one part per
  // operator to job->parts and sets job->sync_status when an operator failed.
  using SnapshotChainFn = std::function<void(const Barrier& b, PersistJob* job)>;

  SubtaskCheckpointer(int task, std::string checkpoint_dir, OutputGate* out, SnapshotPersister* persister,
                      SnapshotChainFn snapshot_chain);

  // Takes checkpoint `b` as `mode`. `alignment_ms`: first barrier to now. `channel_state_pending`:
  // persist only after OnChannelStateDone for it. False when forwarding the barrier failed (the
  // job is cancelled).
  bool Checkpoint(const Barrier& b, SubtaskCheckpointMode mode, int64_t alignment_ms, bool channel_state_pending);
  // The channel state of a checkpoint taken with channel_state_pending is complete.
  void OnChannelStateDone(std::unique_ptr<ChannelStateRecords> cs);
  // True while an aligned barrier is being put on (possibly full) output channels: the task must
  // take no other snapshot from its blocked-output handler meanwhile (checkpoints are taken and
  // persisted in order).
  bool forwarding() const { return forwarding_; }
  // The id of the latest checkpoint this subtask took (0: none yet).
  CheckpointId last_taken() const { return last_taken_; }
  // The jobs waiting for their channel state (or behind one that does), for diagnostics.
  std::string Describe() const;

 private:
  bool ForwardBarrier(const Barrier& b, SubtaskCheckpointMode mode);
  void SubmitReadyJobs();

  const int task_;
  const std::string checkpoint_dir_;
  OutputGate* const out_;
  SnapshotPersister* const persister_;
  const SnapshotChainFn snapshot_chain_;
  bool forwarding_ = false;
  CheckpointId last_taken_ = 0;
  // Persist jobs in checkpoint order; those with channel state wait for it.
  struct WaitingJob {
    std::unique_ptr<PersistJob> job;
    bool ready = false;
  };
  std::map<CheckpointId, WaitingJob> waiting_;
};

}  // namespace cairn

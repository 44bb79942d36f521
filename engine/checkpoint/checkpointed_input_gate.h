// CheckpointedInputGate is a task's input as the task sees it (Flink's CheckpointedInputGate):
// the InputGate that reads the channels, the BarrierHandler that runs the barrier protocol on
// what it reads, and the ChannelStateRecorder that records in-flight records, turning channel
// elements into task events: a batch to process, a checkpoint to take, a channel state that is
// complete, a new input watermark, the end of input, the end of stream. Watermarks are in band:
// a blocked channel's watermark waits behind its records, and none is recorded as channel state.
//
// A priority event is always looked at before the data it overtook is processed: after every
// pop from a channel, that channel's priority lane is drained first.
//
// Contract: used by the task thread only; Poll and PollPriority never block.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/barrier_handler.h"
#include "engine/checkpoint/channel_state_recorder.h"
#include "engine/dataflow/input_gate.h"

namespace cairn {

struct GateEvent {
  enum class Kind { kNone, kBatch, kCheckpoint, kChannelStateDone, kWatermark, kEndOfInput, kEndOfStream };
  Kind kind = Kind::kNone;
  int input_index = 0;                 // kBatch
  size_t slot = 0;                     // kBatch: the channel's index in the gate
  Channel* channel = nullptr;          // kBatch: where to recycle the batch
  RebalanceQueue* rebalance = nullptr; // kBatch from a load-balanced edge: where to recycle it instead
  std::unique_ptr<RecordBatch> batch;  // kBatch
  Barrier barrier;                     // kCheckpoint
  int64_t alignment_ms = 0;            // kCheckpoint: first barrier to snapshot
  SubtaskCheckpointMode mode = SubtaskCheckpointMode::kAligned;  // kCheckpoint: how it is taken
  bool channel_state_pending = false;  // kCheckpoint: a kChannelStateDone for it will follow
  std::unique_ptr<ChannelStateRecords> channel_state;  // kChannelStateDone
  Watermark watermark;                 // kWatermark: the combined input watermark
};

class CheckpointedInputGate {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CheckpointedInputGate(const BarrierClock* clock = BarrierClock::System());
  CheckpointedInputGate(const CheckpointedInputGate&) = delete;
  CheckpointedInputGate& operator=(const CheckpointedInputGate&) = delete;

  // Before the task starts.
  void AddInput(GateInput in) { gate_.AddInput(in); }
  // Restore: see InputGate::AddRestored. Before Poll.
  void AddRestored(size_t slot, RecordBatch records) { gate_.AddRestored(slot, std::move(records)); }

  // The next event, or kNone when nothing is ready now.
  GateEvent Poll();
  // Only what the priority lanes and timers produce (kCheckpoint, kChannelStateDone): for a
  // task that cannot take data now (blocked on output, or throttled).
  GateEvent PollPriority();
  // The task calls this right before it processes rows [begin, end) of a batch from `slot`:
  // they count as consumed, and are copied into the channel state of any checkpoint that was
  // taken after they were sent but before they were processed.
  void MarkProcessed(size_t slot, const RecordBatch& batch, size_t begin, size_t end);

  bool empty() const { return gate_.empty(); }
  // True when Poll may have something: data on a readable channel, a priority event, a stash.
  bool HasWork() const { return HasPriorityWork() || gate_.HasWork(); }
  // True when a priority event or an overtaken event waits, a rebalance recording can close, or
  // a load-balanced edge has an unaligned barrier (what PollPriority would look at).
  bool HasPriorityWork() const;
  // When a pending aligned checkpoint would time out (time_point::max() when none).
  Clock::time_point NextDeadline() const { return handler_.NextDeadline(); }
  const std::vector<GateInput>& inputs() const { return gate_.inputs(); }
  // One line per channel, recording and pending checkpoint, for `kill -USR1` diagnostics.
  std::string Describe() const;

 private:
  GateEvent TakeStash();
  GateEvent DrainPriority(size_t slot);
  static GateEvent Checkpoint(std::optional<CheckpointTrigger> t);
  GateEvent FinishedRecording();
  GateEvent RebalanceBarrier(size_t slot, const Barrier& b);

  InputGate gate_;
  ChannelStateRecorder recorder_;
  BarrierHandler handler_;
};

}  // namespace cairn

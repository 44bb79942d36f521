// InputGate is where records enter a task: it reads the task's input channels fairly and runs
// the checkpoint barrier protocol on them (the barrier handler), turning channel elements into
// task events: a batch to process, a checkpoint to take, a channel state that is complete, the
// end of input, the end of stream.
//
// Barrier handling, per checkpoint mode (see docs/checkpoints.md):
// - aligned (Flink ABS, exactly-once): after barrier n arrives on a channel, that channel is
//   blocked until barrier n arrived on every open channel; then the checkpoint is taken. With
//   an aligned timeout, producers also announce each barrier on the priority lane; once the
//   checkpoint is older than the timeout, the gate switches it to unaligned (below).
// - unaligned (Chandy–Lamport with overtaking markers): the first barrier of checkpoint n, on
//   the priority lane, triggers the snapshot at once; then, on every channel, the records that
//   were sent before that channel's barrier but not processed at the snapshot are copied into
//   the checkpoint's channel state, and processed normally afterwards. Once a channel's barrier
//   position is known, the gate reads the channel ahead up to it (into a per-channel overflow
//   that Poll reads first), so the channel state is complete without waiting for the task to
//   work through the backlog: that is what makes unaligned checkpoints fast under backpressure.
// - at least once: nothing is blocked; the checkpoint is taken when barrier n arrived on every
//   open channel. Records after an early barrier are in the state and may be replayed.
// A priority event is always looked at before the data it overtook is processed: after every
// pop from a channel, that channel's priority lane is drained first.
// Feedback channels (cycles): aligned and at-least-once checkpoints do not wait for the barrier
// on them (it can only come around after this task forwarded it). A feedback channel that
// delivers the barrier before this task's snapshot is blocked until the snapshot; one that did
// not is recorded after the snapshot until its barrier arrives (the marker-receiving rule of
// Chandy–Lamport). End of input and end of stream are counted on the other channels only.
// Such a recording is bounded like the channel's queue: past the channel's backlog limit
// (checkpoint.max_feedback_backlog) the channel's BacklogListener is told, and the job fails.
//
// Contract: used by the task thread only; Poll and PollPriority never block.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/channel.h"

namespace cairn {

struct GateInput {
  Channel* channel;
  int input_index;        // which of the head operator's logical inputs this channel feeds
  bool feedback = false;  // closes a cycle: no barrier is waited for on it (see below)
};

// The in-flight records of one checkpoint, per input channel (gate order).
struct ChannelStateRecords {
  CheckpointId id = 0;
  std::vector<std::string> channel_names;
  std::vector<Schema> schemas;
  std::vector<RecordBatch> records;
};

struct GateEvent {
  enum class Kind { kNone, kBatch, kCheckpoint, kChannelStateDone, kEndOfInput, kEndOfStream };
  Kind kind = Kind::kNone;
  int input_index = 0;                 // kBatch
  size_t slot = 0;                     // kBatch: the channel's index in the gate
  Channel* channel = nullptr;          // kBatch: where to recycle the batch
  std::unique_ptr<RecordBatch> batch;  // kBatch
  Barrier barrier;                     // kCheckpoint
  int64_t alignment_ms = 0;            // kCheckpoint: first barrier to snapshot
  bool unaligned = false;              // kCheckpoint: channel state follows (kChannelStateDone)
  bool switched = false;               // kCheckpoint: an aligned checkpoint switched to unaligned
  bool channel_state_pending = false;  // kCheckpoint: a kChannelStateDone for it will follow
  std::unique_ptr<ChannelStateRecords> channel_state;  // kChannelStateDone
};

class InputGate {
 public:
  using Clock = std::chrono::steady_clock;
  InputGate() = default;
  // Before the task starts.
  void AddInput(GateInput in);

  // The next event, or kNone when nothing is ready now.
  GateEvent Poll();
  // Restore: `records` were in flight on channel `slot` when the restored checkpoint was taken.
  // They are read before anything the channel brings now, and count as part of the channel,
  // so a checkpoint taken while they are replayed records what is left of them. Before Poll.
  // Until every channel's restored records have been delivered, Poll delivers no new data
  // (from any channel): after a rescale, records of one key may have been recorded on another
  // channel than the one that now brings that key's new records, and must come first.
  void AddRestored(size_t slot, RecordBatch records);
  // The task calls this right before it processes rows [begin, end) of a batch from `slot`:
  // they count as consumed, and are copied into the channel state of any checkpoint that was
  // taken after they were sent but before they were processed.
  void MarkProcessed(size_t slot, const RecordBatch& batch, size_t begin, size_t end);
  // Only what the priority lanes and timers produce (kCheckpoint, kChannelStateDone): for a
  // task that cannot take data now (blocked on output, or throttled).
  GateEvent PollPriority();
  bool empty() const { return inputs_.empty(); }
  // True when Poll may have something: data on a readable channel, a priority event, a stash.
  bool HasWork() const;
  // True when a priority event or an overtaken event waits (what PollPriority would look at).
  bool HasPriorityWork() const;
  // When a pending aligned checkpoint would time out (time_point::max() when none).
  Clock::time_point NextDeadline() const;
  const std::vector<GateInput>& inputs() const { return inputs_; }
  // One line per channel and pending checkpoint, for `kill -USR1` diagnostics.
  std::string Describe() const;

 private:
  struct ChannelState {
    bool blocked = false;  // aligned: barrier of the aligning checkpoint received
    bool end_of_input = false;
    bool end_of_stream = false;
    uint64_t consumed = 0;              // records processed by the task (MarkProcessed)
    uint64_t received = 0;              // records taken off the channel's queue
    uint64_t restored = 0;              // restored records ahead of the producer's position 0
    bool restored_pending = false;      // the restored records are still at the overflow's front
    CheckpointId barrier_done = 0;      // highest checkpoint whose barrier this channel delivered
    std::deque<StreamElement> overflow; // taken off the queue ahead of time; read before it
  };
  // One checkpoint this task has taken and is still recording channel state for.
  struct Recording {
    std::unique_ptr<ChannelStateRecords> records;
    std::vector<uint64_t> start;   // channel position at the snapshot
    std::vector<uint64_t> end;     // position of the channel's barrier; kUnknown until it is known
    std::vector<uint64_t> copied;  // records below this position are copied (or not needed)
  };
  static constexpr uint64_t kUnknown = ~0ull;

  GateEvent TakeStash();
  GateEvent DrainPriority(size_t ch);
  GateEvent OnDataBarrier(size_t ch, const Barrier& b);
  GateEvent OnPriority(size_t ch, const PriorityEvent& e);
  GateEvent CheckTimeout();
  GateEvent StartAligned(const Barrier& b);
  GateEvent SnapshotUnaligned(const Barrier& b, bool switched);
  GateEvent CompleteAligned();
  void SetEnd(size_t ch, CheckpointId id, uint64_t end);
  GateEvent FinishedRecording();
  GateEvent Deliver(size_t ch, std::unique_ptr<RecordBatch> b);
  bool PopElement(size_t ch, StreamElement* e);
  // Copies what is known to lie in [copied, end) of a channel, reading the channel ahead.
  void Advance(Recording& r, size_t ch);
  void AdvanceAll();
  static void CopyRange(const RecordBatch& b, uint64_t first_pos, size_t first_row, size_t rows, Recording& r,
                        size_t ch);
  // Channels that are not feedback channels and have not ended.
  size_t OpenChannels() const { return regular_ - ended_stream_; }
  // A recording of checkpoint `id` starting at every channel's position, all ends unknown.
  Recording NewRecording(CheckpointId id) const;
  // After a snapshot: a recording for the feedback channels whose barrier has not come yet.
  bool RecordFeedback(const Barrier& b);
  // Tells the channel's BacklogListener (once) when recording `id` holds more of feedback
  // channel `ch`'s records than the channel's backlog limit.
  void CheckRecordingBound(CheckpointId id, const Recording& r, size_t ch);

  std::vector<GateInput> inputs_;
  std::deque<ChannelState> state_;  // a deque: ChannelState is not copyable
  size_t next_ = 0;  // round-robin start
  size_t regular_ = 0;  // channels that are not feedback channels
  size_t restored_pending_ = 0;  // channels whose restored records have not been delivered
  size_t ended_input_ = 0;
  size_t ended_stream_ = 0;
  bool end_of_input_reported_ = false;
  bool end_of_stream_reported_ = false;

  // The batch the task is processing (delivered, maybe partly processed).
  const RecordBatch* in_progress_ = nullptr;
  size_t in_progress_slot_ = 0;
  size_t in_progress_offset_ = 0;
  // A popped batch held back while an event that precedes it is reported.
  bool has_stash_ = false;
  size_t stash_channel_ = 0;
  std::unique_ptr<RecordBatch> stash_;
  // A priority event taken off its lane but not handled yet (an older checkpoint came first).
  bool has_priority_stash_ = false;
  size_t priority_stash_channel_ = 0;
  PriorityEvent priority_stash_;

  // The checkpoint being aligned (aligned mode) or counted (at-least-once), if any.
  bool aligning_ = false;
  Barrier aligning_barrier_;
  size_t barriers_received_ = 0;
  Clock::time_point alignment_start_;
  std::map<CheckpointId, size_t> at_least_once_counts_;
  // Announced aligned barriers: checkpoint -> (channel -> position).
  std::map<CheckpointId, std::map<size_t, uint64_t>> announced_;
  CheckpointId last_snapshot_ = 0;     // highest checkpoint this task has snapshotted
  std::map<CheckpointId, Recording> recordings_;
  bool recording_bound_reported_ = false;
};

}  // namespace cairn

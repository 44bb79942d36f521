// BarrierHandler decides, for one subtask, what the barriers arriving on its input gate mean:
// when to block a channel, when to take a checkpoint and in which mode, and which in-flight
// records to record as channel state (docs/checkpoints.md, "Barrier handling"). It sits between
// the InputGate (reading) and the Task (processing); CheckpointedInputGate wires the three.
//
// - Exactly-once barriers (aligned, unaligned, aligned with a timeout) go through the explicit
//   states of barrier_handler_state.h (WaitingForFirstBarrier, CollectingAlignedBarriers), to
//   which the handler is the BarrierHandlerController.
// - At-least-once barriers are counted by the CheckpointBarrierTracker: nothing is blocked.
// - After a snapshot, the ChannelStateRecorder records what is in flight: on every channel for an
//   unaligned checkpoint, on the feedback channels whose barrier has not come for the others.
// - Feedback channels (cycles): no barrier is waited for on them (it can only come around after
//   this subtask forwarded it). One that delivers the barrier before this subtask's snapshot is
//   blocked until the snapshot (aligned); one that did not is recorded after the snapshot until
//   its barrier arrives (the marker-receiving rule of Chandy–Lamport).
// - A barrier of a checkpoint this subtask took already (it switched, or took it unaligned) only
//   ends that channel's part of the channel state.
//
// Contract: task thread only. Each On* call returns the checkpoint to take now, if any; at most
// one per call. The gate and the recorder outlive the handler.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/barrier_handler_state.h"
#include "engine/checkpoint/channel_state_recorder.h"
#include "engine/dataflow/input_gate.h"

namespace cairn {

// The clocks a barrier handler reads: the wall clock (the aligned timeout counts from the
// barrier's trigger time at the coordinator) and a steady clock (alignment durations). Tests
// inject a fake. Any thread.
class BarrierClock {
 public:
  virtual ~BarrierClock() = default;
  virtual int64_t WallMillis() const;  // Unix ms
  virtual std::chrono::steady_clock::time_point Now() const;
  // The system clocks.
  static const BarrierClock* System();
};

// A checkpoint the subtask takes now.
struct CheckpointTrigger {
  Barrier barrier;
  SubtaskCheckpointMode mode = SubtaskCheckpointMode::kAligned;
  int64_t alignment_ms = 0;            // first barrier (or announcement) to the snapshot
  bool channel_state_pending = false;  // its channel state is being recorded; persist after it
};

// Counts the barriers of at-least-once checkpoints (Flink's CheckpointBarrierTracker): several
// may be under way at once, and nothing is blocked. A checkpoint is complete when its barrier
// arrived on every open channel (one rule, Complete below).
class CheckpointBarrierTracker {
 public:
  // Barrier `b` arrived on one regular channel.
  void OnBarrier(const Barrier& b);
  // Checkpoint `id`, removed from the tracker if it is complete with `open` open channels.
  std::optional<Barrier> TakeIfComplete(CheckpointId id, size_t open);
  // The oldest complete checkpoint, removed from the tracker (a channel ended: fewer to wait for).
  std::optional<Barrier> TakeFirstComplete(size_t open);
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    Barrier barrier;   // as it first arrived
    size_t count = 0;  // channels that delivered it
  };
  static bool Complete(const Pending& p, size_t open) { return open > 0 && p.count >= open; }
  std::map<CheckpointId, Pending> pending_;
};

class BarrierHandler : private BarrierHandlerController {
 public:
  BarrierHandler(InputGate* gate, ChannelStateRecorder* recorder, const BarrierClock* clock = BarrierClock::System());

  // A barrier from channel `slot`'s data lane.
  std::optional<CheckpointTrigger> OnBarrier(size_t slot, const Barrier& b);
  // An event from channel `slot`'s priority lane (position in the gate's numbering).
  std::optional<CheckpointTrigger> OnPriorityEvent(size_t slot, const PriorityEvent& e);
  // Channel `slot` ended its stream.
  std::optional<CheckpointTrigger> OnChannelEnded(size_t slot);
  // Time passed (the aligned timeout).
  std::optional<CheckpointTrigger> OnTimer();
  // A priority event handed back (Defer) waits to be handled again.
  bool has_deferred() const { return deferred_.has_value(); }
  // Handles the deferred priority event, if any.
  std::optional<CheckpointTrigger> HandleDeferred();
  // When OnTimer must be called at the latest (time_point::max() when never).
  Clock::time_point NextDeadline() const { return state_->Deadline(*this); }
  CheckpointId last_snapshot() const { return last_snapshot_; }
  const BarrierHandlerState& state() const { return *state_; }
  std::string Describe() const;

 private:
  struct DeferredEvent {
    size_t slot;
    PriorityEvent event;
  };
  // BarrierHandlerController.
  void BlockChannel(size_t slot) override { gate_->Block(slot); }
  size_t OpenChannels() const override { return gate_->OpenChannels(); }
  bool AlignedTimeoutPassed(const Barrier& b) const override;
  Clock::time_point Now() const override { return clock_->Now(); }
  Clock::time_point TimeoutDeadline(const Barrier& b) const override;
  void RecordAnnouncement(size_t slot, const Barrier& b, uint64_t position) override;
  void TakeAligned(const Barrier& b, int64_t alignment_ms) override;
  void TakeUnaligned(const Barrier& b, SubtaskCheckpointMode mode, int64_t alignment_ms) override;
  void UnalignedBarrierReceived(size_t slot, CheckpointId id, uint64_t position) override;
  void Defer(size_t slot, const PriorityEvent& e) override { deferred_ = DeferredEvent{slot, e}; }

  void Transition(std::unique_ptr<BarrierHandlerState> next);
  std::optional<CheckpointTrigger> TakeTriggered();
  // An at-least-once checkpoint is complete.
  void TakeAtLeastOnce(const Barrier& b);
  // After a snapshot: starts a recording for the feedback channels whose barrier has not come
  // yet; false when there are none.
  bool RecordFeedback(const Barrier& b);

  InputGate* const gate_;
  ChannelStateRecorder* const recorder_;
  const BarrierClock* const clock_;
  std::unique_ptr<BarrierHandlerState> state_;
  CheckpointBarrierTracker tracker_;
  std::vector<CheckpointId> barrier_done_;  // per channel: highest checkpoint whose barrier came
  // Announced aligned barriers: checkpoint -> (channel -> position).
  std::map<CheckpointId, std::map<size_t, uint64_t>> announced_;
  CheckpointId last_snapshot_ = 0;  // highest checkpoint this subtask has snapshotted
  std::optional<DeferredEvent> deferred_;
  std::optional<CheckpointTrigger> triggered_;  // what the current call takes
};

}  // namespace cairn

// BarrierHandlerState is one state of the exactly-once barrier handler of a subtask (Flink's
// BarrierHandlerState): each state is a small class whose handlers act on the input through a
// BarrierHandlerController and return the next state (null: stay in this one).
//
// States (docs/checkpoints.md, "Barrier handling"):
// - WaitingForFirstBarrier: no checkpoint is being aligned. An aligned barrier blocks its
//   channel and starts CollectingAlignedBarriers (so does an announcement, without blocking);
//   an unaligned barrier takes the checkpoint unaligned at once and stays.
// - CollectingAlignedBarriers: barrier n arrived on some channels (or was announced on the
//   priority lane); each channel that delivered it is blocked. The last open channel's barrier
//   (or the end of stream of the last awaited one) takes the checkpoint aligned. The aligned
//   timeout, an unaligned barrier of n, or any priority event of a newer checkpoint (handled
//   right after) switch it: it is taken unaligned at once. Either way: WaitingForFirstBarrier.
// The handler only sees barriers of checkpoints newer than the last one this subtask took, on
// regular (not feedback) channels; what happens after a snapshot (the channel recording) belongs
// to the ChannelStateRecorder, and at-least-once barriers to the CheckpointBarrierTracker.
//
// Contract: task thread only; states hold no pointers into the controller.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/checkpoint/subtask_checkpoint_mode.h"
#include "engine/dataflow/stream_element.h"

namespace cairn {

// What a barrier handler state may do: the narrow view of the input gate and of the checkpoint
// to take. Implemented by the BarrierHandler; by a fake in tests.
class BarrierHandlerController {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~BarrierHandlerController() = default;
  // Stops reading channel `slot` until the checkpoint is taken.
  virtual void BlockChannel(size_t slot) = 0;
  // Regular channels that have not ended their stream: the barriers to wait for.
  virtual size_t OpenChannels() const = 0;
  // True once checkpoint `b` is older than its aligned timeout (never when it has none).
  virtual bool AlignedTimeoutPassed(const Barrier& b) const = 0;
  virtual Clock::time_point Now() const = 0;
  // When checkpoint `b` times out (time_point::max() when it has no aligned timeout).
  virtual Clock::time_point TimeoutDeadline(const Barrier& b) const = 0;
  // Barrier `b` was announced on channel `slot` at `position` (its place on the data lane).
  virtual void RecordAnnouncement(size_t slot, const Barrier& b, uint64_t position) = 0;
  // Takes checkpoint `b` aligned (every channel unblocked afterwards).
  virtual void TakeAligned(const Barrier& b, int64_t alignment_ms) = 0;
  // Takes checkpoint `b` unaligned now: its in-flight records are recorded (every channel
  // unblocked afterwards).
  virtual void TakeUnaligned(const Barrier& b, SubtaskCheckpointMode mode, int64_t alignment_ms) = 0;
  // After TakeUnaligned: channel `slot`'s barrier of checkpoint `id` came, at `position`.
  virtual void UnalignedBarrierReceived(size_t slot, CheckpointId id, uint64_t position) = 0;
  // Hands priority event `e` of channel `slot` back, to be handled again after the checkpoint
  // taken now.
  virtual void Defer(size_t slot, const PriorityEvent& e) = 0;
};

class BarrierHandlerState {
 public:
  virtual ~BarrierHandlerState() = default;
  virtual std::string Describe() const = 0;
  // An aligned barrier from the data lane of regular channel `slot`.
  virtual std::unique_ptr<BarrierHandlerState> OnBarrier(BarrierHandlerController& c, size_t slot,
                                                         const Barrier& b) = 0;
  // A priority event of channel `slot`: an announcement or an unaligned barrier.
  virtual std::unique_ptr<BarrierHandlerState> OnPriorityEvent(BarrierHandlerController& c, size_t slot,
                                                               const PriorityEvent& e) = 0;
  // A channel ended its stream: it sends no barrier any more (OpenChannels may have dropped).
  virtual std::unique_ptr<BarrierHandlerState> OnChannelEnded(BarrierHandlerController& c) = 0;
  // Time passed: the aligned timeout may have come.
  virtual std::unique_ptr<BarrierHandlerState> OnTimer(BarrierHandlerController& c) = 0;
  // When OnTimer must be called at the latest.
  virtual BarrierHandlerController::Clock::time_point Deadline(const BarrierHandlerController& c) const = 0;
};

class WaitingForFirstBarrier : public BarrierHandlerState {
 public:
  std::string Describe() const override { return "waiting for the first barrier"; }
  std::unique_ptr<BarrierHandlerState> OnBarrier(BarrierHandlerController& c, size_t slot, const Barrier& b) override;
  std::unique_ptr<BarrierHandlerState> OnPriorityEvent(BarrierHandlerController& c, size_t slot,
                                                       const PriorityEvent& e) override;
  std::unique_ptr<BarrierHandlerState> OnChannelEnded(BarrierHandlerController& c) override { return nullptr; }
  std::unique_ptr<BarrierHandlerState> OnTimer(BarrierHandlerController& c) override { return nullptr; }
  BarrierHandlerController::Clock::time_point Deadline(const BarrierHandlerController& c) const override {
    return BarrierHandlerController::Clock::time_point::max();
  }
};

class CollectingAlignedBarriers : public BarrierHandlerState {
 public:
  CollectingAlignedBarriers(const Barrier& b, BarrierHandlerController::Clock::time_point start)
      : barrier_(b), start_(start) {}
  std::string Describe() const override;
  std::unique_ptr<BarrierHandlerState> OnBarrier(BarrierHandlerController& c, size_t slot, const Barrier& b) override;
  std::unique_ptr<BarrierHandlerState> OnPriorityEvent(BarrierHandlerController& c, size_t slot,
                                                       const PriorityEvent& e) override;
  std::unique_ptr<BarrierHandlerState> OnChannelEnded(BarrierHandlerController& c) override;
  std::unique_ptr<BarrierHandlerState> OnTimer(BarrierHandlerController& c) override;
  BarrierHandlerController::Clock::time_point Deadline(const BarrierHandlerController& c) const override {
    return c.TimeoutDeadline(barrier_);
  }
  const Barrier& barrier() const { return barrier_; }
  size_t barriers_received() const { return received_; }

 private:
  int64_t AlignmentMs(const BarrierHandlerController& c) const;
  // Takes the checkpoint being aligned unaligned now, as `mode`.
  std::unique_ptr<BarrierHandlerState> Switch(BarrierHandlerController& c);

  const Barrier barrier_;
  const BarrierHandlerController::Clock::time_point start_;  // first barrier or announcement
  size_t received_ = 0;                                      // channels blocked on barrier_
};

}  // namespace cairn

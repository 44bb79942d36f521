#include "engine/checkpoint/barrier_handler.h"

#include <algorithm>

namespace cairn {

int64_t BarrierClock::WallMillis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::chrono::steady_clock::time_point BarrierClock::Now() const { return std::chrono::steady_clock::now(); }

const BarrierClock* BarrierClock::System() {
  static const BarrierClock system;
  return &system;
}

void CheckpointBarrierTracker::OnBarrier(const Barrier& b) {
  Pending& p = pending_[b.id];
  if (p.count == 0) p.barrier = b;
  ++p.count;
}

std::optional<Barrier> CheckpointBarrierTracker::TakeIfComplete(CheckpointId id, size_t open) {
  auto it = pending_.find(id);
  if (it == pending_.end() || !Complete(it->second, open)) return std::nullopt;
  Barrier b = it->second.barrier;
  pending_.erase(it);
  return b;
}

std::optional<Barrier> CheckpointBarrierTracker::TakeFirstComplete(size_t open) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (!Complete(it->second, open)) continue;
    Barrier b = it->second.barrier;
    pending_.erase(it);
    return b;
  }
  return std::nullopt;
}

BarrierHandler::BarrierHandler(InputGate* gate, ChannelStateRecorder* recorder, const BarrierClock* clock)
    : gate_(gate), recorder_(recorder), clock_(clock), state_(std::make_unique<WaitingForFirstBarrier>()) {}

void BarrierHandler::Transition(std::unique_ptr<BarrierHandlerState> next) {
  if (next != nullptr) state_ = std::move(next);
}

std::optional<CheckpointTrigger> BarrierHandler::TakeTriggered() {
  std::optional<CheckpointTrigger> t = std::move(triggered_);
  triggered_.reset();
  return t;
}

std::optional<CheckpointTrigger> BarrierHandler::OnBarrier(size_t ch, const Barrier& b) {
  barrier_done_.resize(gate_->size());
  barrier_done_[ch] = std::max(barrier_done_[ch], b.id);
  if (b.id <= last_snapshot_) {
    // Taken already (switched to unaligned): the barrier ends this channel's in-flight records.
    recorder_->SetEnd(ch, b.id, gate_->consumed(ch));
    return std::nullopt;
  }
  if (gate_->feedback(ch)) {
    // Came around before this subtask's snapshot: what follows it on this channel is after the
    // cut. Aligned: hold the channel until the snapshot. At least once: read on.
    if (b.mode != CheckpointMode::kAtLeastOnce) gate_->Block(ch);
    return std::nullopt;
  }
  if (b.mode == CheckpointMode::kAtLeastOnce) {
    tracker_.OnBarrier(b);
    if (std::optional<Barrier> done = tracker_.TakeIfComplete(b.id, gate_->OpenChannels())) TakeAtLeastOnce(*done);
    return TakeTriggered();
  }
  Transition(state_->OnBarrier(*this, ch, b));
  return TakeTriggered();
}

std::optional<CheckpointTrigger> BarrierHandler::OnPriorityEvent(size_t ch, const PriorityEvent& e) {
  barrier_done_.resize(gate_->size());
  const Barrier& b = e.barrier;
  if (b.id <= last_snapshot_) {
    // The checkpoint was taken here already; the event marks where this channel's part ends.
    recorder_->SetEnd(ch, b.id, e.position);
    if (e.kind == PriorityEvent::Kind::kUnalignedBarrier) barrier_done_[ch] = std::max(barrier_done_[ch], b.id);
    return std::nullopt;
  }
  Transition(state_->OnPriorityEvent(*this, ch, e));
  return TakeTriggered();
}

std::optional<CheckpointTrigger> BarrierHandler::HandleDeferred() {
  if (!deferred_.has_value()) return std::nullopt;
  DeferredEvent d = *deferred_;
  deferred_.reset();
  return OnPriorityEvent(d.slot, d.event);
}

std::optional<CheckpointTrigger> BarrierHandler::OnChannelEnded(size_t ch) {
  recorder_->OnChannelEnded(ch);
  // A channel that ended sends no barrier: a checkpoint waiting for it may be complete.
  Transition(state_->OnChannelEnded(*this));
  if (triggered_.has_value()) return TakeTriggered();
  if (std::optional<Barrier> done = tracker_.TakeFirstComplete(gate_->OpenChannels())) TakeAtLeastOnce(*done);
  return TakeTriggered();
}

std::optional<CheckpointTrigger> BarrierHandler::OnTimer() {
  Transition(state_->OnTimer(*this));
  return TakeTriggered();
}

bool BarrierHandler::AlignedTimeoutPassed(const Barrier& b) const {
  if (b.aligned_timeout_ms <= 0) return false;
  return clock_->WallMillis() - b.trigger_time_ms >= b.aligned_timeout_ms;
}

BarrierHandler::Clock::time_point BarrierHandler::TimeoutDeadline(const Barrier& b) const {
  if (b.aligned_timeout_ms <= 0) return Clock::time_point::max();
  int64_t left = b.trigger_time_ms + b.aligned_timeout_ms - clock_->WallMillis();
  return clock_->Now() + std::chrono::milliseconds(std::max<int64_t>(left, 0));
}

void BarrierHandler::RecordAnnouncement(size_t ch, const Barrier& b, uint64_t position) {
  announced_[b.id][ch] = position;
}

void BarrierHandler::TakeAtLeastOnce(const Barrier& b) {
  CheckpointTrigger t;
  t.barrier = b;
  t.mode = SubtaskCheckpointMode::kAtLeastOnce;
  last_snapshot_ = std::max(last_snapshot_, b.id);
  t.channel_state_pending = RecordFeedback(b);
  triggered_ = t;
}

void BarrierHandler::TakeAligned(const Barrier& b, int64_t alignment_ms) {
  CheckpointTrigger t;
  t.barrier = b;
  t.mode = SubtaskCheckpointMode::kAligned;
  t.alignment_ms = alignment_ms;
  last_snapshot_ = b.id;
  announced_.erase(announced_.begin(), announced_.upper_bound(b.id));
  t.channel_state_pending = RecordFeedback(b);
  gate_->UnblockAll();
  triggered_ = t;
}

bool BarrierHandler::RecordFeedback(const Barrier& b) {
  // Feedback channels whose barrier has not come around, and rebalance slots (their batches of
  // older colours still to come are recorded; engine/checkpoint/channel_state_recorder.h).
  auto open = [&](size_t i) {
    if (gate_->end_of_stream(i)) return false;
    return gate_->rebalance(i) != nullptr || (gate_->feedback(i) && barrier_done_[i] < b.id);
  };
  barrier_done_.resize(gate_->size());
  bool any = false;
  for (size_t i = 0; i < gate_->size(); ++i) any |= open(i);
  if (!any) return false;
  std::vector<uint64_t> ends(gate_->size(), ChannelStateRecorder::kUnknown);
  for (size_t i = 0; i < gate_->size(); ++i)
    if (!open(i)) ends[i] = gate_->consumed(i);
  recorder_->Start(b.id, std::move(ends));
  return true;
}

void BarrierHandler::TakeUnaligned(const Barrier& b, SubtaskCheckpointMode mode, int64_t alignment_ms) {
  const size_t n = gate_->size();
  barrier_done_.resize(n);
  std::vector<uint64_t> ends(n, ChannelStateRecorder::kUnknown);
  for (size_t i = 0; i < n; ++i)
    if (barrier_done_[i] >= b.id || gate_->end_of_stream(i)) ends[i] = gate_->consumed(i);
  auto ann = announced_.find(b.id);
  if (ann != announced_.end())
    for (const auto& [ch, pos] : ann->second)
      if (ends[ch] == ChannelStateRecorder::kUnknown) ends[ch] = pos;
  announced_.erase(announced_.begin(), announced_.upper_bound(b.id));
  CheckpointTrigger t;
  t.barrier = b;
  t.mode = mode;
  t.alignment_ms = alignment_ms;
  t.channel_state_pending = true;
  gate_->UnblockAll();
  last_snapshot_ = b.id;
  recorder_->Start(b.id, std::move(ends), /*read_ahead=*/true);
  recorder_->Advance(b.id);
  triggered_ = t;
}

void BarrierHandler::UnalignedBarrierReceived(size_t ch, CheckpointId id, uint64_t position) {
  // This channel's in-flight records end at the barrier's position, not at the snapshot.
  recorder_->SetEnd(ch, id, position);
  barrier_done_[ch] = std::max(barrier_done_[ch], id);
}

std::string BarrierHandler::Describe() const {
  std::string out = "  barrier handler: " + state_->Describe() + ", last_snapshot=" + std::to_string(last_snapshot_);
  if (tracker_.pending() > 0) out += ", at-least-once pending=" + std::to_string(tracker_.pending());
  if (deferred_.has_value()) out += ", deferred priority event";
  out += "\n";
  for (size_t i = 0; i < barrier_done_.size(); ++i)
    if (barrier_done_[i] > 0)
      out += "  " + gate_->inputs()[i].channel->name() + ": barrier_done=" + std::to_string(barrier_done_[i]) + "\n";
  for (const auto& [id, chans] : announced_)
    out += "  announced " + std::to_string(id) + " on " + std::to_string(chans.size()) + " channels\n";
  return out;
}

}  // namespace cairn

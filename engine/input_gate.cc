#include "engine/input_gate.h"

#include <algorithm>

namespace cairn {

namespace {
int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void InputGate::AddInput(GateInput in) {
  inputs_.push_back(in);
  state_.emplace_back();
}

bool InputGate::HasWork() const {
  if (has_stash_ || has_priority_stash_) return true;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].channel->HasPriority()) return true;
    if (!state_[i].blocked && !state_[i].end_of_stream && inputs_[i].channel->HasData()) return true;
  }
  return false;
}

bool InputGate::HasPriorityWork() const {
  if (has_priority_stash_) return true;
  for (const GateInput& in : inputs_)
    if (in.channel->HasPriority()) return true;
  return false;
}

InputGate::Clock::time_point InputGate::NextDeadline() const {
  if (!aligning_ || aligning_barrier_.aligned_timeout_ms <= 0) return Clock::time_point::max();
  int64_t left = aligning_barrier_.trigger_time_ms + aligning_barrier_.aligned_timeout_ms - WallMillis();
  return Clock::now() + std::chrono::milliseconds(std::max<int64_t>(left, 0));
}

void InputGate::MarkProcessed(size_t ch, const RecordBatch& b, size_t begin, size_t end) {
  uint64_t first = state_[ch].consumed;  // index of row `begin`
  for (auto& [id, r] : recordings_) {
    uint64_t from = std::max(first, r.start[ch]);
    uint64_t to = std::min(first + (end - begin), r.end[ch]);
    for (uint64_t i = from; i < to; ++i) r.records->records[ch].AddFrom(b, begin + (i - first));
  }
  state_[ch].consumed += end - begin;
}

GateEvent InputGate::Deliver(size_t ch, std::unique_ptr<RecordBatch> b) {
  GateEvent ev;
  ev.kind = GateEvent::Kind::kBatch;
  ev.slot = ch;
  ev.input_index = inputs_[ch].input_index;
  ev.channel = inputs_[ch].channel;
  ev.batch = std::move(b);
  return ev;
}

GateEvent InputGate::TakeStash() {
  GateEvent ev = DrainPriority(stash_channel_);
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  has_stash_ = false;
  return Deliver(stash_channel_, std::move(stash_));
}

GateEvent InputGate::DrainPriority(size_t ch) {
  if (has_priority_stash_) {
    has_priority_stash_ = false;
    GateEvent ev = OnPriority(priority_stash_channel_, priority_stash_);
    if (ev.kind != GateEvent::Kind::kNone) return ev;
  }
  PriorityEvent e;
  while (inputs_[ch].channel->TryPopPriority(&e)) {
    GateEvent ev = OnPriority(ch, e);
    if (ev.kind != GateEvent::Kind::kNone) return ev;
  }
  return GateEvent{};
}

GateEvent InputGate::PollPriority() {
  GateEvent ev = FinishedRecording();
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    ev = DrainPriority(i);
    if (ev.kind != GateEvent::Kind::kNone) return ev;
  }
  return CheckTimeout();
}

GateEvent InputGate::Poll() {
  GateEvent ev = PollPriority();
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  if (has_stash_) return TakeStash();
  const size_t n = inputs_.size();
  for (size_t k = 0; k < n; ++k) {
    size_t i = (next_ + k) % n;
    ChannelState& s = state_[i];
    if (s.blocked || s.end_of_stream) continue;
    StreamElement e;
    if (!inputs_[i].channel->TryPop(&e)) continue;
    next_ = (i + 1) % n;
    switch (e.kind) {
      case StreamElement::Kind::kBatch: {
        // Whatever overtook this batch on the priority lane is handled before it.
        ev = DrainPriority(i);
        if (ev.kind != GateEvent::Kind::kNone) {
          has_stash_ = true;
          stash_channel_ = i;
          stash_ = std::move(e.batch);
          return ev;
        }
        return Deliver(i, std::move(e.batch));
      }
      case StreamElement::Kind::kBarrier:
        ev = OnDataBarrier(i, e.barrier);
        if (ev.kind != GateEvent::Kind::kNone) return ev;
        break;
      case StreamElement::Kind::kEndOfInput:
        s.end_of_input = true;
        if (++ended_input_ == n && !end_of_input_reported_) {
          end_of_input_reported_ = true;
          ev.kind = GateEvent::Kind::kEndOfInput;
          return ev;
        }
        break;
      case StreamElement::Kind::kEndOfStream:
        s.end_of_stream = true;
        ++ended_stream_;
        for (auto& [id, r] : recordings_)
          if (r.end[i] == kUnknown) r.end[i] = s.consumed;
        // A channel that ended sends no barrier: a checkpoint waiting for it may be complete.
        if (aligning_ && barriers_received_ >= OpenChannels()) return CompleteAligned();
        for (auto it = at_least_once_counts_.begin(); it != at_least_once_counts_.end(); ++it) {
          if (it->second >= OpenChannels() && OpenChannels() > 0) {
            GateEvent c;
            c.kind = GateEvent::Kind::kCheckpoint;
            c.barrier.id = it->first;
            c.barrier.mode = CheckpointMode::kAtLeastOnce;
            last_snapshot_ = std::max(last_snapshot_, it->first);
            at_least_once_counts_.erase(it);
            return c;
          }
        }
        break;
    }
  }
  if (ended_stream_ == n && !end_of_stream_reported_) {
    end_of_stream_reported_ = true;
    ev.kind = GateEvent::Kind::kEndOfStream;
    return ev;
  }
  return GateEvent{};
}

GateEvent InputGate::OnDataBarrier(size_t ch, const Barrier& b) {
  ChannelState& s = state_[ch];
  s.barrier_done = std::max(s.barrier_done, b.id);
  if (b.id <= last_snapshot_) {
    // Taken already (switched to unaligned): the barrier ends this channel's in-flight records.
    SetEnd(ch, b.id, s.consumed);
    return GateEvent{};
  }
  if (b.mode == CheckpointMode::kAtLeastOnce) {
    size_t& count = at_least_once_counts_[b.id];
    if (++count < OpenChannels()) return GateEvent{};
    at_least_once_counts_.erase(b.id);
    last_snapshot_ = b.id;
    GateEvent ev;
    ev.kind = GateEvent::Kind::kCheckpoint;
    ev.barrier = b;
    return ev;
  }
  // Aligned.
  if (!aligning_) StartAligned(b);
  s.blocked = true;
  ++barriers_received_;
  if (barriers_received_ >= OpenChannels()) return CompleteAligned();
  return CheckTimeout();
}

GateEvent InputGate::OnPriority(size_t ch, const PriorityEvent& e) {
  const Barrier& b = e.barrier;
  if (b.id <= last_snapshot_) {
    // The checkpoint was taken here already; the event marks where this channel's part ends.
    SetEnd(ch, b.id, e.position);
    if (e.kind == PriorityEvent::Kind::kUnalignedBarrier)
      state_[ch].barrier_done = std::max(state_[ch].barrier_done, b.id);
    return GateEvent{};
  }
  if (aligning_ && aligning_barrier_.id < b.id) {
    // A newer checkpoint overtook the one being aligned: take the older one first, unaligned.
    has_priority_stash_ = true;
    priority_stash_channel_ = ch;
    priority_stash_ = e;
    return SnapshotUnaligned(aligning_barrier_, true);
  }
  if (e.kind == PriorityEvent::Kind::kAnnouncement) {
    announced_[b.id][ch] = e.position;
    if (!aligning_) StartAligned(b);
    return CheckTimeout();
  }
  state_[ch].barrier_done = std::max(state_[ch].barrier_done, b.id);
  bool switched = aligning_ && aligning_barrier_.id == b.id;
  GateEvent ev = SnapshotUnaligned(switched ? aligning_barrier_ : b, switched);
  SetEnd(ch, b.id, e.position);
  return ev;
}

GateEvent InputGate::StartAligned(const Barrier& b) {
  aligning_ = true;
  aligning_barrier_ = b;
  barriers_received_ = 0;
  alignment_start_ = Clock::now();
  return GateEvent{};
}

GateEvent InputGate::CheckTimeout() {
  if (!aligning_ || aligning_barrier_.aligned_timeout_ms <= 0) return GateEvent{};
  if (WallMillis() - aligning_barrier_.trigger_time_ms < aligning_barrier_.aligned_timeout_ms) return GateEvent{};
  return SnapshotUnaligned(aligning_barrier_, true);
}

GateEvent InputGate::CompleteAligned() {
  GateEvent ev;
  ev.kind = GateEvent::Kind::kCheckpoint;
  ev.barrier = aligning_barrier_;
  ev.alignment_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - alignment_start_).count();
  aligning_ = false;
  barriers_received_ = 0;
  last_snapshot_ = aligning_barrier_.id;
  announced_.erase(announced_.begin(), announced_.upper_bound(aligning_barrier_.id));
  for (ChannelState& s : state_) s.blocked = false;
  return ev;
}

GateEvent InputGate::SnapshotUnaligned(const Barrier& b, bool switched) {
  const size_t n = inputs_.size();
  Recording r;
  r.records = std::make_unique<ChannelStateRecords>();
  r.records->id = b.id;
  r.records->records.resize(n);
  r.start.resize(n);
  r.end.resize(n);
  for (size_t i = 0; i < n; ++i) {
    r.records->channel_names.push_back(inputs_[i].channel->name());
    const ChannelState& s = state_[i];
    r.start[i] = s.consumed;
    r.end[i] = (s.barrier_done >= b.id || s.end_of_stream) ? s.consumed : kUnknown;
  }
  auto ann = announced_.find(b.id);
  if (ann != announced_.end())
    for (const auto& [ch, pos] : ann->second)
      if (r.end[ch] == kUnknown) r.end[ch] = pos;
  announced_.erase(announced_.begin(), announced_.upper_bound(b.id));
  GateEvent ev;
  ev.kind = GateEvent::Kind::kCheckpoint;
  ev.barrier = b;
  ev.unaligned = true;
  ev.switched = switched;
  if (aligning_)
    ev.alignment_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - alignment_start_).count();
  aligning_ = false;
  barriers_received_ = 0;
  for (ChannelState& s : state_) s.blocked = false;
  last_snapshot_ = b.id;
  recordings_.emplace(b.id, std::move(r));
  return ev;
}

void InputGate::SetEnd(size_t ch, CheckpointId id, uint64_t end) {
  auto it = recordings_.find(id);
  if (it != recordings_.end() && it->second.end[ch] == kUnknown) it->second.end[ch] = end;
}

GateEvent InputGate::FinishedRecording() {
  if (recordings_.empty()) return GateEvent{};
  Recording& r = recordings_.begin()->second;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (r.end[i] == kUnknown) return GateEvent{};
    if (state_[i].consumed < r.end[i] && !state_[i].end_of_stream) return GateEvent{};
  }
  GateEvent ev;
  ev.kind = GateEvent::Kind::kChannelStateDone;
  ev.channel_state = std::move(r.records);
  recordings_.erase(recordings_.begin());
  return ev;
}

}  // namespace cairn

#include "engine/dataflow/input_gate.h"

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
  if (!in.feedback) ++regular_;
}

bool InputGate::HasWork() const {
  if (has_stash_ || has_priority_stash_) return true;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].channel->HasPriority()) return true;
    const ChannelState& s = state_[i];
    if (!s.blocked && !s.end_of_stream && (!s.overflow.empty() || inputs_[i].channel->HasData())) return true;
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

std::string InputGate::Describe() const {
  std::string out;
  auto num = [](uint64_t v) { return v == kUnknown ? std::string("?") : std::to_string(v); };
  out += "  gate: aligning=" + (aligning_ ? std::to_string(aligning_barrier_.id) : std::string("-")) +
         " last_snapshot=" + std::to_string(last_snapshot_) + " stash=" + (has_stash_ ? "yes" : "no") + "\n";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const ChannelState& s = state_[i];
    out += "  " + inputs_[i].channel->name() + ": queued=" + std::to_string(inputs_[i].channel->SizeApprox()) +
           " overflow=" + std::to_string(s.overflow.size()) + " consumed=" + std::to_string(s.consumed) +
           " received=" + std::to_string(s.received) + (s.blocked ? " blocked" : "") +
           (s.end_of_input ? " end_of_input" : "") + (s.end_of_stream ? " end_of_stream" : "") +
           " barrier_done=" + std::to_string(s.barrier_done) + "\n";
  }
  for (const auto& [id, r] : recordings_) {
    out += "  recording " + std::to_string(id) + ":";
    for (size_t i = 0; i < inputs_.size(); ++i)
      out += " [" + std::to_string(r.start[i]) + "," + num(r.end[i]) + ") copied " + std::to_string(r.copied[i]);
    out += "\n";
  }
  for (const auto& [id, chans] : announced_) out += "  announced " + std::to_string(id) + " on " + std::to_string(chans.size()) + " channels\n";
  return out;
}

void InputGate::AddRestored(size_t ch, RecordBatch records) {
  if (records.empty()) return;
  ChannelState& s = state_[ch];
  s.restored += records.size();
  s.received += records.size();
  StreamElement e = StreamElement::OfBatch(std::make_unique<RecordBatch>(std::move(records)));
  s.overflow.push_front(std::move(e));
  inputs_[ch].channel->NoteReadAhead();
  if (!s.restored_pending) {
    s.restored_pending = true;
    ++restored_pending_;
  }
}

void InputGate::CopyRange(const RecordBatch& b, uint64_t first_pos, size_t first_row, size_t rows, Recording& r,
                          size_t ch) {
  uint64_t from = std::max(first_pos, r.copied[ch]);
  uint64_t to = std::min<uint64_t>(first_pos + rows, r.end[ch]);
  if (from >= to) return;
  r.records->records[ch].AppendRange(b, first_row + (from - first_pos), first_row + (to - first_pos));
  r.copied[ch] = to;
}

void InputGate::MarkProcessed(size_t ch, const RecordBatch& b, size_t begin, size_t end) {
  ChannelState& s = state_[ch];
  for (auto& [id, r] : recordings_) {
    CopyRange(b, s.consumed, begin, end - begin, r, ch);
    if (inputs_[ch].feedback) CheckRecordingBound(id, r, ch);
  }
  s.consumed += end - begin;
  in_progress_offset_ = end;
  if (end == b.size()) in_progress_ = nullptr;
}

void InputGate::CheckRecordingBound(CheckpointId id, const Recording& r, size_t ch) {
  const Channel* c = inputs_[ch].channel;
  const uint64_t limit = c->backlog_limit();
  if (limit == 0 || recording_bound_reported_ || r.records->records[ch].size() <= limit) return;
  recording_bound_reported_ = true;  // the job fails; the recording stays whole meanwhile
  if (c->backlog_listener() != nullptr)
    c->backlog_listener()->BacklogExceeded(Status::Aborted(
        "feedback edge " + c->name() + ": the records recorded on it for checkpoint " + std::to_string(id) +
        " exceed checkpoint.max_feedback_backlog = " + std::to_string(limit) +
        " records: the records of its cycle multiply faster than the cycle drains them (raise "
        "checkpoint.max_feedback_backlog if this backlog is expected)"));
}

void InputGate::Advance(Recording& r, size_t ch) {
  if (r.end[ch] == kUnknown || r.copied[ch] >= r.end[ch]) return;
  ChannelState& s = state_[ch];
  uint64_t pos = s.consumed;
  // What was taken off the queue but not processed, in channel order: the batch in progress,
  // the stash, the overflow.
  if (in_progress_ != nullptr && in_progress_slot_ == ch) {
    size_t rows = in_progress_->size() - in_progress_offset_;
    CopyRange(*in_progress_, pos, in_progress_offset_, rows, r, ch);
    pos += rows;
  }
  if (has_stash_ && stash_channel_ == ch) {
    CopyRange(*stash_, pos, 0, stash_->size(), r, ch);
    pos += stash_->size();
  }
  for (const StreamElement& e : s.overflow) {
    if (e.kind != StreamElement::Kind::kBatch) continue;
    CopyRange(*e.batch, pos, 0, e.batch->size(), r, ch);
    pos += e.batch->size();
  }
  // Then read the queue ahead, up to the barrier's position.
  Channel* c = inputs_[ch].channel;
  if (r.end[ch] > s.restored) c->WantUpTo(r.end[ch] - s.restored);  // in the producer's numbering
  StreamElement e;
  while (s.received < r.end[ch] && c->TryPop(&e)) {
    c->NoteReadAhead();
    if (e.kind == StreamElement::Kind::kBatch) {
      CopyRange(*e.batch, s.received, 0, e.batch->size(), r, ch);
      s.received += e.batch->size();
    }
    s.overflow.push_back(std::move(e));
  }
}

void InputGate::AdvanceAll() {
  for (auto& [id, r] : recordings_)
    for (size_t ch = 0; ch < inputs_.size(); ++ch) Advance(r, ch);
}

bool InputGate::PopElement(size_t ch, StreamElement* e) {
  ChannelState& s = state_[ch];
  if (!s.overflow.empty()) {
    *e = std::move(s.overflow.front());
    s.overflow.pop_front();
    if (s.restored_pending) {
      s.restored_pending = false;
      --restored_pending_;
    }
    inputs_[ch].channel->ReadAheadConsumed();
    return true;
  }
  if (!inputs_[ch].channel->TryPop(e)) return false;
  if (e->kind == StreamElement::Kind::kBatch) s.received += e->batch->size();
  return true;
}

GateEvent InputGate::Deliver(size_t ch, std::unique_ptr<RecordBatch> b) {
  in_progress_ = b.get();
  in_progress_slot_ = ch;
  in_progress_offset_ = 0;
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
  AdvanceAll();
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
  const size_t first = next_;  // next_ moves as channels are read; the scan must not skip any
  for (size_t k = 0; k < n; ++k) {
    size_t i = (first + k) % n;
    ChannelState& s = state_[i];
    if (s.blocked || s.end_of_stream) continue;
    if (restored_pending_ > 0 && !s.restored_pending) continue;  // restored records first
    StreamElement e;
    if (!PopElement(i, &e)) continue;
    next_ = (i + 1) % n;
    switch (e.kind) {
      case StreamElement::Kind::kBatch:
        // Whatever overtook this batch on the priority lane is handled before it. The batch
        // waits in the stash meanwhile, where a snapshot's read-ahead finds it.
        has_stash_ = true;
        stash_channel_ = i;
        stash_ = std::move(e.batch);
        return TakeStash();
      case StreamElement::Kind::kBarrier:
        ev = OnDataBarrier(i, e.barrier);
        if (ev.kind != GateEvent::Kind::kNone) return ev;
        break;
      case StreamElement::Kind::kEndOfInput:
        s.end_of_input = true;
        if (inputs_[i].feedback) break;
        if (++ended_input_ == regular_ && !end_of_input_reported_) {
          end_of_input_reported_ = true;
          ev.kind = GateEvent::Kind::kEndOfInput;
          return ev;
        }
        break;
      case StreamElement::Kind::kEndOfStream:
        s.end_of_stream = true;
        if (!inputs_[i].feedback) ++ended_stream_;
        for (auto& [id, r] : recordings_)
          if (r.end[i] == kUnknown) r.end[i] = s.received;
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
            c.channel_state_pending = RecordFeedback(c.barrier);
            return c;
          }
        }
        break;
    }
  }
  // A barrier read above may have completed a recording.
  ev = FinishedRecording();
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  if (ended_stream_ == regular_ && !end_of_stream_reported_) {
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
  if (inputs_[ch].feedback) {
    // Came around before this task's snapshot: what follows it on this channel is after the
    // cut. Aligned: hold the channel until the snapshot. At least once: read on.
    if (b.mode != CheckpointMode::kAtLeastOnce) s.blocked = true;
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
    ev.channel_state_pending = RecordFeedback(b);
    return ev;
  }
  // Aligned.
  if (!aligning_) StartAligned(b);
  s.blocked = true;
  ++barriers_received_;
  if (barriers_received_ >= OpenChannels()) return CompleteAligned();
  return CheckTimeout();
}

GateEvent InputGate::OnPriority(size_t ch, const PriorityEvent& in) {
  // Positions count from the producer's start; restored records come before that.
  PriorityEvent e = in;
  e.position += state_[ch].restored;
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
    priority_stash_ = in;
    return SnapshotUnaligned(aligning_barrier_, true);
  }
  if (e.kind == PriorityEvent::Kind::kAnnouncement) {
    announced_[b.id][ch] = e.position;
    if (!aligning_) StartAligned(b);
    return CheckTimeout();
  }
  bool switched = aligning_ && aligning_barrier_.id == b.id;
  GateEvent ev = SnapshotUnaligned(switched ? aligning_barrier_ : b, switched);
  // This channel's in-flight records end at the barrier's position, not at the snapshot.
  SetEnd(ch, b.id, e.position);
  state_[ch].barrier_done = std::max(state_[ch].barrier_done, b.id);
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
  ev.channel_state_pending = RecordFeedback(aligning_barrier_);
  for (ChannelState& s : state_) s.blocked = false;
  return ev;
}

InputGate::Recording InputGate::NewRecording(CheckpointId id) const {
  const size_t n = inputs_.size();
  Recording r;
  r.records = std::make_unique<ChannelStateRecords>();
  r.records->id = id;
  r.records->records.resize(n);
  r.start.resize(n);
  r.copied.resize(n);
  r.end.assign(n, kUnknown);
  for (size_t i = 0; i < n; ++i) {
    r.records->channel_names.push_back(inputs_[i].channel->name());
    r.records->schemas.push_back(inputs_[i].channel->schema());
    r.start[i] = r.copied[i] = state_[i].consumed;
  }
  return r;
}

bool InputGate::RecordFeedback(const Barrier& b) {
  auto open = [&](size_t i) {
    return inputs_[i].feedback && state_[i].barrier_done < b.id && !state_[i].end_of_stream;
  };
  bool any = false;
  for (size_t i = 0; i < inputs_.size(); ++i) any |= open(i);
  if (!any) return false;
  Recording r = NewRecording(b.id);
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!open(i)) r.end[i] = state_[i].consumed;
  recordings_.emplace(b.id, std::move(r));
  return true;
}

GateEvent InputGate::SnapshotUnaligned(const Barrier& b, bool switched) {
  const size_t n = inputs_.size();
  Recording r = NewRecording(b.id);
  for (size_t i = 0; i < n; ++i) {
    const ChannelState& s = state_[i];
    if (s.barrier_done >= b.id || s.end_of_stream) r.end[i] = s.consumed;
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
  ev.channel_state_pending = true;
  ev.switched = switched;
  if (aligning_)
    ev.alignment_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - alignment_start_).count();
  aligning_ = false;
  barriers_received_ = 0;
  for (ChannelState& s : state_) s.blocked = false;
  last_snapshot_ = b.id;
  auto it = recordings_.emplace(b.id, std::move(r)).first;
  for (size_t i = 0; i < n; ++i) Advance(it->second, i);
  return ev;
}

void InputGate::SetEnd(size_t ch, CheckpointId id, uint64_t end) {
  auto it = recordings_.find(id);
  if (it == recordings_.end() || it->second.end[ch] != kUnknown) return;
  it->second.end[ch] = end;
  Advance(it->second, ch);
}

GateEvent InputGate::FinishedRecording() {
  if (recordings_.empty()) return GateEvent{};
  Recording& r = recordings_.begin()->second;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (r.end[i] == kUnknown || r.copied[i] < r.end[i]) return GateEvent{};
  GateEvent ev;
  ev.kind = GateEvent::Kind::kChannelStateDone;
  ev.channel_state = std::move(r.records);
  recordings_.erase(recordings_.begin());
  return ev;
}

}  // namespace cairn

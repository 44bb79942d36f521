#include "engine/dataflow/input_gate.h"

#include <algorithm>

namespace cairn {

void InputGate::AddInput(GateInput in) {
  inputs_.push_back(in);
  state_.emplace_back();
  watermarks_.AddChannel(in.feedback);
  if (!in.feedback) ++regular_;
}

bool InputGate::HasWork() const {
  if (stash_ != nullptr) return true;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].channel->HasPriority()) return true;
    const ChannelState& s = state_[i];
    if (s.blocked || s.end_of_stream) continue;
    if (RebalanceQueue* q = inputs_[i].rebalance) {
      if (!s.ahead.empty() || q->HasData()) return true;
      const RebalanceQueue::View v = q->Look();
      Barrier b;
      if (IdleRebalanceBarrier(i, v, &b)) return true;
      if (!s.end_of_input && v.all_ended_input && s.barrier_done >= v.end_colour) return true;
      if (s.end_of_input && v.all_ended_stream) return true;
      continue;
    }
    if (!s.overflow.empty() || inputs_[i].channel->HasData()) return true;
  }
  return false;
}

uint64_t InputGate::DeliveredBelow(size_t ch, CheckpointId id) const {
  uint64_t n = 0;
  for (const auto& [colour, k] : state_[ch].delivered) {
    if (colour >= id) break;
    n += k;
  }
  return n;
}

bool InputGate::EagerRebalanceBarrier(size_t ch, Barrier* b) const {
  const ChannelState& s = state_[ch];
  if (s.blocked || s.end_of_stream || s.end_of_input) return false;
  RebalanceQueue* q = inputs_[ch].rebalance;
  if (q->Look().any_ended_input) return false;
  return q->NextBarrier(s.barrier_done, ~CheckpointId{0}, b) && b->mode == CheckpointMode::kUnaligned;
}

void InputGate::CountDelivered(size_t ch, CheckpointId colour) {
  ++state_[ch].delivered[colour];
  inputs_[ch].rebalance->Delivered(colour);
}

InputGate::AheadItem* InputGate::ReadAheadRebalance(size_t ch, size_t limit) {
  ChannelState& s = state_[ch];
  if (s.ahead.size() >= limit) return nullptr;
  RebalanceItem item;
  if (!inputs_[ch].rebalance->TryPop(&item)) return nullptr;
  s.received += item.batch->size();
  s.ahead.push_back(AheadItem{std::move(item.batch), item.colour, false, item.restored});
  return &s.ahead.back();
}

void InputGate::VisitRebalanceUnprocessed(
    size_t ch, const std::function<void(const RecordBatch&, size_t, CheckpointId, bool)>& visit) const {
  if (in_progress_ != nullptr && in_progress_slot_ == ch)
    visit(*in_progress_, in_progress_offset_, in_progress_colour_, in_progress_counted_);
  if (stash_ != nullptr && stash_slot_ == ch) visit(*stash_, 0, stash_colour_, stash_counted_);
  for (const AheadItem& a : state_[ch].ahead) visit(*a.batch, 0, a.colour, a.counted);
}

bool InputGate::IdleRebalanceBarrier(size_t ch, const RebalanceQueue::View& v, Barrier* b) const {
  const ChannelState& s = state_[ch];
  // Only checkpoints every producer snapshotted; before the end of input, only those some
  // producer took before its end of input (the later ones follow the end of input).
  CheckpointId upto = v.all_snapshotted;
  if (!s.end_of_input && v.all_ended_input) upto = std::min(upto, v.end_colour);
  if (upto <= s.barrier_done) return false;
  return inputs_[ch].rebalance->NextBarrier(s.barrier_done, upto, b);
}

InputGate::Read InputGate::ReadRebalance(size_t ch, Barrier* barrier) {
  ChannelState& s = state_[ch];
  RebalanceQueue* q = inputs_[ch].rebalance;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (s.ahead.empty()) {
      RebalanceItem item;
      if (q->TryPop(&item)) {
        s.received += item.batch->size();
        s.ahead.push_back(AheadItem{std::move(item.batch), item.colour, false, item.restored});
      }
    }
    if (!s.ahead.empty()) {
      AheadItem& held = s.ahead.front();
      // A newer colour: the producer snapshotted since; its barriers come before the batch.
      if (held.colour > s.barrier_done && q->NextBarrier(s.barrier_done, held.colour, barrier)) {
        s.barrier_done = barrier->id;
        return Read::kBarrier;
      }
      s.barrier_done = std::max(s.barrier_done, held.colour);
      stash_ = std::move(held.batch);
      stash_slot_ = ch;
      stash_colour_ = held.colour;
      stash_counted_ = held.counted;
      if (!held.restored) q->Release();  // room on the queue for the next one
      s.ahead.pop_front();
      return Read::kBatch;
    }
    const RebalanceQueue::View v = q->Look();
    if (IdleRebalanceBarrier(ch, v, barrier)) {
      s.barrier_done = barrier->id;
      return Read::kBarrier;
    }
    if (!s.end_of_input && v.all_ended_input) {
      // Every producer pushed its last batch before it ended: one more look finds any left.
      if (attempt == 0) continue;
      if (s.barrier_done < v.end_colour) return Read::kDone;  // its barriers come first
      return EndInput(ch);
    }
    if (s.end_of_input && v.all_ended_stream) return EndStream(ch);
    return Read::kDone;
  }
  return Read::kDone;
}

InputGate::Read InputGate::EndInput(size_t i) {
  ChannelState& s = state_[i];
  s.end_of_input = true;
  if (inputs_[i].feedback) return Read::kChannelEndOfInput;
  // The final watermark of this channel (its producer sent it already, unless it has no
  // watermarks at all); the task hears of it with the end of input.
  watermarks_.OnEndOfInput(i);
  if (++ended_input_ == regular_ && !end_of_input_reported_) {
    end_of_input_reported_ = true;
    return Read::kEndOfInput;
  }
  return Read::kChannelEndOfInput;
}

InputGate::Read InputGate::EndStream(size_t i) {
  state_[i].end_of_stream = true;
  if (!inputs_[i].feedback) ++ended_stream_;
  return Read::kChannelEndOfStream;
}

bool InputGate::HasPriorityWork() const {
  for (const GateInput& in : inputs_)
    if (in.channel->HasPriority()) return true;
  return false;
}

std::string InputGate::Describe() const {
  std::string out;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const ChannelState& s = state_[i];
    if (const RebalanceQueue* q = inputs_[i].rebalance) {
      out += q->Describe() + "    this subtask: taken ahead=" + std::to_string(s.ahead.size()) +
             " barrier_done=" + std::to_string(s.barrier_done) + " consumed=" + std::to_string(s.consumed) +
             (s.blocked ? " blocked" : "") + (s.end_of_input ? " end_of_input" : "") +
             (s.end_of_stream ? " end_of_stream" : "") + "\n";
      continue;
    }
    out += "  " + inputs_[i].channel->name() + ": queued=" + std::to_string(inputs_[i].channel->SizeApprox()) +
           " overflow=" + std::to_string(s.overflow.size()) + " consumed=" + std::to_string(s.consumed) +
           " received=" + std::to_string(s.received) + " watermark=" + std::to_string(watermarks_.channel(i).timestamp) +
           (watermarks_.channel(i).idle ? " idle" : "") + (s.blocked ? " blocked" : "") +
           (s.end_of_input ? " end_of_input" : "") + (s.end_of_stream ? " end_of_stream" : "") + "\n";
  }
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

void InputGate::MarkProcessed(size_t ch, const RecordBatch& b, size_t begin, size_t end) {
  state_[ch].consumed += end - begin;
  in_progress_offset_ = end;
  if (inputs_[ch].rebalance != nullptr && end == b.size() && !in_progress_counted_) {
    // Mattern's count: the item is received once all of it is processed (recorded, when after
    // a snapshot it belongs to), unless it was counted when read ahead into a record.
    CountDelivered(ch, in_progress_colour_);
  }
  if (end == b.size()) in_progress_ = nullptr;
}

void InputGate::UnblockAll() {
  for (ChannelState& s : state_) s.blocked = false;
}

void InputGate::ReadAhead(size_t ch, uint64_t end, const RecordVisitor& visit) {
  ChannelState& s = state_[ch];
  uint64_t pos = s.consumed;
  // What was taken off the queue but not processed, in channel order: the batch in progress,
  // the stash, the overflow.
  if (in_progress_ != nullptr && in_progress_slot_ == ch) {
    size_t rows = in_progress_->size() - in_progress_offset_;
    visit(*in_progress_, pos, in_progress_offset_, rows);
    pos += rows;
  }
  if (stash_ != nullptr && stash_slot_ == ch) {
    visit(*stash_, pos, 0, stash_->size());
    pos += stash_->size();
  }
  for (const StreamElement& e : s.overflow) {
    if (e.kind != StreamElement::Kind::kBatch) continue;
    visit(*e.batch, pos, 0, e.batch->size());
    pos += e.batch->size();
  }
  // Then read the queue ahead, up to `end`.
  Channel* c = inputs_[ch].channel;
  if (end > s.restored) c->WantUpTo(end - s.restored);  // in the producer's numbering
  StreamElement e;
  while (s.received < end && c->TryPop(&e)) {
    c->NoteReadAhead();
    if (e.kind == StreamElement::Kind::kBatch) {
      visit(*e.batch, s.received, 0, e.batch->size());
      s.received += e.batch->size();
    }
    s.overflow.push_back(std::move(e));
  }
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

bool InputGate::PopPriority(size_t ch, PriorityEvent* e) {
  if (!inputs_[ch].channel->TryPopPriority(e)) return false;
  // Positions count from the producer's start; restored records come before that.
  e->position += state_[ch].restored;
  return true;
}

std::unique_ptr<RecordBatch> InputGate::TakeStash() {
  in_progress_ = stash_.get();
  in_progress_slot_ = stash_slot_;
  in_progress_offset_ = 0;
  in_progress_colour_ = stash_colour_;
  in_progress_counted_ = stash_counted_;
  return std::move(stash_);
}

InputGate::Read InputGate::ReadNext(Scan* scan, size_t* slot, Barrier* barrier) {
  const size_t n = inputs_.size();
  // next_ moves as channels are read; the scan counts from where it began, so it skips none.
  while (scan->k < n) {
    size_t i = (scan->first + scan->k) % n;
    ++scan->k;
    ChannelState& s = state_[i];
    if (s.blocked || s.end_of_stream) continue;
    if (restored_pending_ > 0 && !s.restored_pending) continue;  // restored records first
    if (inputs_[i].rebalance != nullptr) {
      Read r = ReadRebalance(i, barrier);
      if (r == Read::kDone) continue;
      next_ = (i + 1) % n;
      *slot = i;
      return r;
    }
    StreamElement e;
    if (!PopElement(i, &e)) continue;
    next_ = (i + 1) % n;
    *slot = i;
    switch (e.kind) {
      case StreamElement::Kind::kBatch:
        stash_slot_ = i;
        stash_ = std::move(e.batch);
        return Read::kBatch;
      case StreamElement::Kind::kBarrier:
        *barrier = e.barrier;
        return Read::kBarrier;
      case StreamElement::Kind::kWatermark:
        if (watermarks_.OnWatermark(i, e.watermark)) return Read::kWatermark;
        continue;  // nothing changed: on with the scan
      case StreamElement::Kind::kEndOfInput:
        return EndInput(i);
      case StreamElement::Kind::kEndOfStream:
        return EndStream(i);
    }
  }
  return Read::kDone;
}

bool InputGate::TakeEndOfStream() {
  if (ended_stream_ != regular_ || end_of_stream_reported_) return false;
  end_of_stream_reported_ = true;
  return true;
}

}  // namespace cairn

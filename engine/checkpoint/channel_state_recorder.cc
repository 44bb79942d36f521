#include "engine/checkpoint/channel_state_recorder.h"

#include <algorithm>

#include "engine/base/crash_points.h"

namespace cairn {

void ChannelStateRecorder::Start(CheckpointId id, std::vector<uint64_t> ends, bool read_ahead) {
  const size_t n = gate_->size();
  Recording r;
  r.records = std::make_unique<ChannelStateRecords>();
  r.records->id = id;
  r.records->records.reserve(n);
  r.start.resize(n);
  r.copied.resize(n);
  r.end = std::move(ends);
  r.read_ahead = read_ahead;
  r.rebalance_open.assign(n, 0);
  r.received_before.assign(n, 0);
  r.received_after.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const RebalanceQueue* q = gate_->rebalance(i);
    r.records->channel_names.push_back(q != nullptr ? q->name() : gate_->inputs()[i].channel->name());
    r.records->schemas.push_back(gate_->inputs()[i].channel->schema());
    r.records->records.emplace_back(r.records->schemas.back() ? RecordBatch(r.records->schemas.back()) : RecordBatch());
    r.start[i] = r.copied[i] = gate_->consumed(i);
    if (q != nullptr) {
      // No position ends this part: the colours decide (OnProcessed), the counts close it.
      r.end[i] = r.start[i];
      r.rebalance_open[i] = !gate_->end_of_stream(i);
      // Batches read ahead for an earlier record (counted, not processed) are in flight for
      // this one too: recorded now, counted after the snapshot.
      uint64_t ahead = 0;
      RecordBatch& rec = r.records->records[i];
      gate_->VisitRebalanceUnprocessed(i, [&](const RecordBatch& b, size_t first, CheckpointId colour, bool counted) {
        if (!counted || colour >= id) return;
        rec.AppendRange(b, first, b.size());
        ++ahead;
      });
      r.received_before[i] = gate_->DeliveredBelow(i, id) - ahead;
      r.received_after[i] = ahead;
    }
  }
  recordings_.emplace(id, std::move(r));
}

void ChannelStateRecorder::Advance(CheckpointId id) {
  auto it = recordings_.find(id);
  if (it == recordings_.end()) return;
  for (size_t i = 0; i < gate_->size(); ++i) Advance(it->second, i);
}

void ChannelStateRecorder::CopyRange(const RecordBatch& b, uint64_t first_pos, size_t first_row, size_t rows,
                                     Recording& r, size_t ch) {
  uint64_t from = std::max(first_pos, r.copied[ch]);
  uint64_t to = std::min<uint64_t>(first_pos + rows, r.end[ch]);
  if (from >= to) return;
  r.records->records[ch].AppendRange(b, first_row + (from - first_pos), first_row + (to - first_pos));
  r.copied[ch] = to;
}

void ChannelStateRecorder::OnProcessed(size_t ch, const RecordBatch& b, size_t begin, size_t end) {
  const uint64_t consumed = gate_->consumed(ch);
  if (gate_->rebalance(ch) != nullptr) {
    // Lai–Yang: a batch of an older colour than the checkpoint, processed after the snapshot;
    // one read ahead is in every record that wants it already.
    if (gate_->in_progress_counted()) return;
    const CheckpointId colour = gate_->in_progress_colour();
    for (auto& [id, r] : recordings_) {
      if (!r.rebalance_open[ch] || colour >= id) continue;
      r.records->records[ch].AppendRange(b, begin, end);
      if (end == b.size()) ++r.received_after[ch];
    }
    return;
  }
  for (auto& [id, r] : recordings_) {
    CopyRange(b, consumed, begin, end - begin, r, ch);
    if (gate_->feedback(ch)) CheckRecordingBound(id, r, ch);
  }
}

void ChannelStateRecorder::CheckRecordingBound(CheckpointId id, const Recording& r, size_t ch) {
  const Channel* c = gate_->inputs()[ch].channel;
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

void ChannelStateRecorder::Advance(Recording& r, size_t ch) {
  if (r.end[ch] == kUnknown || r.copied[ch] >= r.end[ch]) return;
  gate_->ReadAhead(ch, r.end[ch], [&](const RecordBatch& b, uint64_t pos, size_t first_row, size_t rows) {
    CopyRange(b, pos, first_row, rows, r, ch);
  });
}

void ChannelStateRecorder::AdvanceAll() {
  for (auto& [id, r] : recordings_)
    for (size_t ch = 0; ch < gate_->size(); ++ch) Advance(r, ch);
  for (size_t ch = 0; ch < gate_->size(); ++ch)
    if (gate_->rebalance(ch) != nullptr) ReadAheadRebalance(ch);
  for (auto& [id, r] : recordings_) CloseRebalance(id, r);
}

void ChannelStateRecorder::ReadAheadRebalance(size_t ch) {
  // As an unaligned checkpoint reads a channel ahead to its barrier, its open record takes the
  // batches waiting on the shared queue now rather than after the backlog: the white ones are
  // recorded (and counted) at once, and processed later by this subtask. What it takes still
  // counts against the queue's capacity (RebalanceQueue::Release), so the producers' red
  // batches do not flood in meanwhile; at most four times the capacity waits here.
  const RebalanceQueue* q = gate_->rebalance(ch);
  auto wanted = [&] {
    const CheckpointId complete = q->Look().white_complete;
    for (const auto& [id, r] : recordings_)
      if (r.read_ahead && r.rebalance_open[ch] && complete < id) return true;
    return false;
  };
  // Records (and counts) a batch read ahead in every open record it is white for.
  auto record = [&](InputGate::AheadItem& item) {
    for (auto& [id, r] : recordings_) {
      if (!r.rebalance_open[ch] || item.colour >= id) continue;
      r.records->records[ch].AppendRange(*item.batch, 0, item.batch->size());
      ++r.received_after[ch];
      item.counted = true;
    }
    if (item.counted) gate_->CountDelivered(ch, item.colour);
  };
  if (!wanted()) return;
  // Those read ahead before, of a colour that was new then and is white for this record now.
  for (InputGate::AheadItem& item : gate_->rebalance_ahead(ch))
    if (!item.counted) record(item);
  while (wanted()) {
    InputGate::AheadItem* item = gate_->ReadAheadRebalance(ch, 4 * q->capacity());
    if (item == nullptr) return;
    record(*item);
  }
}

void ChannelStateRecorder::CloseRebalance(CheckpointId id, Recording& r) {
  for (size_t ch = 0; ch < gate_->size(); ++ch) {
    if (!r.rebalance_open[ch] || gate_->rebalance(ch)->Look().white_complete < id) continue;
    r.rebalance_open[ch] = 0;
    CAIRN_CRASH_POINT("rebalance.recording_closed");
  }
}

bool ChannelStateRecorder::RebalanceClosable() const {
  for (const auto& [id, r] : recordings_)
    for (size_t ch = 0; ch < gate_->size(); ++ch)
      if (r.rebalance_open[ch] && gate_->rebalance(ch)->Look().white_complete >= id) return true;
  return false;
}

void ChannelStateRecorder::SetEnd(size_t ch, CheckpointId id, uint64_t end) {
  auto it = recordings_.find(id);
  if (it == recordings_.end() || it->second.end[ch] != kUnknown) return;
  it->second.end[ch] = end;
  Advance(it->second, ch);
}

void ChannelStateRecorder::OnChannelEnded(size_t ch) {
  for (auto& [id, r] : recordings_) {
    if (r.end[ch] == kUnknown) r.end[ch] = gate_->received(ch);
    r.rebalance_open[ch] = 0;  // every producer ended the stream: nothing more comes
  }
}

std::unique_ptr<ChannelStateRecords> ChannelStateRecorder::TakeFinished() {
  if (recordings_.empty()) return nullptr;
  Recording& r = recordings_.begin()->second;
  for (size_t i = 0; i < gate_->size(); ++i)
    if (r.end[i] == kUnknown || r.copied[i] < r.end[i] || r.rebalance_open[i]) return nullptr;
  std::unique_ptr<ChannelStateRecords> done = std::move(r.records);
  for (size_t i = 0; i < gate_->size(); ++i)
    if (gate_->rebalance(i) != nullptr)
      done->rebalance_counts.push_back(
          RebalanceCount{gate_->rebalance(i)->name(), 0, r.received_before[i], r.received_after[i]});
  recordings_.erase(recordings_.begin());
  return done;
}

std::string ChannelStateRecorder::Describe() const {
  std::string out;
  auto num = [](uint64_t v) { return v == kUnknown ? std::string("?") : std::to_string(v); };
  for (const auto& [id, r] : recordings_) {
    out += "  recording " + std::to_string(id) + ":";
    for (size_t i = 0; i < r.start.size(); ++i)
      out += gate_->rebalance(i) != nullptr
                 ? std::string(" [rebalance ") + (r.rebalance_open[i] ? "open" : "closed") + ", " +
                       std::to_string(r.records->records[i].size()) + " records]"
                 : " [" + std::to_string(r.start[i]) + "," + num(r.end[i]) + ") copied " + std::to_string(r.copied[i]);
    out += "\n";
  }
  return out;
}

}  // namespace cairn

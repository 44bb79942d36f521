#include "engine/checkpoint/channel_state_recorder.h"

#include <algorithm>

namespace cairn {

void ChannelStateRecorder::Start(CheckpointId id, std::vector<uint64_t> ends) {
  const size_t n = gate_->size();
  Recording r;
  r.records = std::make_unique<ChannelStateRecords>();
  r.records->id = id;
  r.records->records.reserve(n);
  r.start.resize(n);
  r.copied.resize(n);
  r.end = std::move(ends);
  for (size_t i = 0; i < n; ++i) {
    r.records->channel_names.push_back(gate_->inputs()[i].channel->name());
    r.records->schemas.push_back(gate_->inputs()[i].channel->schema());
    r.records->records.emplace_back(r.records->schemas.back() ? RecordBatch(r.records->schemas.back()) : RecordBatch());
    r.start[i] = r.copied[i] = gate_->consumed(i);
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
}

void ChannelStateRecorder::SetEnd(size_t ch, CheckpointId id, uint64_t end) {
  auto it = recordings_.find(id);
  if (it == recordings_.end() || it->second.end[ch] != kUnknown) return;
  it->second.end[ch] = end;
  Advance(it->second, ch);
}

void ChannelStateRecorder::OnChannelEnded(size_t ch) {
  for (auto& [id, r] : recordings_)
    if (r.end[ch] == kUnknown) r.end[ch] = gate_->received(ch);
}

std::unique_ptr<ChannelStateRecords> ChannelStateRecorder::TakeFinished() {
  if (recordings_.empty()) return nullptr;
  Recording& r = recordings_.begin()->second;
  for (size_t i = 0; i < gate_->size(); ++i)
    if (r.end[i] == kUnknown || r.copied[i] < r.end[i]) return nullptr;
  std::unique_ptr<ChannelStateRecords> done = std::move(r.records);
  recordings_.erase(recordings_.begin());
  return done;
}

std::string ChannelStateRecorder::Describe() const {
  std::string out;
  auto num = [](uint64_t v) { return v == kUnknown ? std::string("?") : std::to_string(v); };
  for (const auto& [id, r] : recordings_) {
    out += "  recording " + std::to_string(id) + ":";
    for (size_t i = 0; i < r.start.size(); ++i)
      out += " [" + std::to_string(r.start[i]) + "," + num(r.end[i]) + ") copied " + std::to_string(r.copied[i]);
    out += "\n";
  }
  return out;
}

}  // namespace cairn

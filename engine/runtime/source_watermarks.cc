#include "engine/runtime/source_watermarks.h"

#include <algorithm>

namespace cairn {

void SourceWatermarkGenerator::Start(const SourceWatermarks& config, const SplitSource* splits, Clock::time_point now) {
  config_ = config;
  source_ = config.enabled ? splits : nullptr;
  splits_.clear();
  if (!config_.enabled) return;
  if (source_ == nullptr) {
    splits_[0].last_record = now;  // idle_timeout counts from the start too
    return;
  }
  split_field_ = source_->split_field();
  source_->ActiveSplits(&active_);
  for (int64_t id : active_) splits_[id].last_record = now;
}

SourceWatermarkGenerator::Split& SourceWatermarkGenerator::SplitOf(int64_t id, Clock::time_point now) {
  auto [it, added] = splits_.try_emplace(id);
  if (added) it->second.last_record = now;
  return it->second;
}

void SourceWatermarkGenerator::OnRecords(const RecordBatch& batch, Clock::time_point now) {
  if (!config_.enabled || batch.empty()) return;
  const size_t f = static_cast<size_t>(config_.field);
  if (source_ == nullptr) {
    Split& s = splits_[0];
    s.last_record = now;
    int64_t max = s.max_event_time;
    for (size_t i = 0; i < batch.size(); ++i)
      if (!batch.IsNull(i, f)) max = std::max(max, batch.GetInt64(i, f));
    s.max_event_time = max;
    return;
  }
  // Records of one split mostly come in runs: look it up once per run.
  const size_t sf = static_cast<size_t>(split_field_);
  int64_t run_id = 0;
  Split* run = nullptr;
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t id = batch.IsNull(i, sf) ? -1 : batch.GetInt64(i, sf);
    if (run == nullptr || id != run_id) {
      run = &SplitOf(id, now);
      run->last_record = now;
      run_id = id;
    }
    if (!batch.IsNull(i, f)) run->max_event_time = std::max(run->max_event_time, batch.GetInt64(i, f));
  }
}

SourceWatermarkGenerator::Current SourceWatermarkGenerator::Now(Clock::time_point now) {
  Current c;
  if (!config_.enabled) return c;
  if (source_ != nullptr) {
    // Splits read to their end no longer count; new ones count from now.
    source_->ActiveSplits(&active_);
    std::sort(active_.begin(), active_.end());
    for (auto it = splits_.begin(); it != splits_.end();)
      it = std::binary_search(active_.begin(), active_.end(), it->first) ? std::next(it) : splits_.erase(it);
    for (int64_t id : active_) SplitOf(id, now);
  }
  const int64_t lag = config_.max_out_of_orderness_ms + 1;
  // max - max_out_of_orderness - 1, saturating.
  auto of = [lag](const Split& s) {
    return s.max_event_time < kMinWatermark + lag ? kMinWatermark : s.max_event_time - lag;
  };
  bool any_active = false;
  int64_t wm = kMaxWatermark;
  Clock::time_point last = Clock::time_point::min();
  for (const auto& [id, s] : splits_) {
    last = std::max(last, s.last_record);
    if (Idle(s, now)) continue;
    any_active = true;
    wm = std::min(wm, of(s));
  }
  c.idle = !any_active;
  if (any_active) {
    c.watermark = wm;
    return c;
  }
  // Every split idle: the watermark of the last ones to go idle (the latest last record), as it
  // was just before they did. Asked late (a task woken after more than one split's deadline
  // passed), this is still the watermark an on-time call would have seen last; the earlier
  // ones, over more splits, were no larger.
  wm = kMaxWatermark;
  for (const auto& [id, s] : splits_)
    if (s.last_record == last) wm = std::min(wm, of(s));
  c.watermark = splits_.empty() ? kMinWatermark : wm;
  return c;
}

SourceWatermarkGenerator::Clock::time_point SourceWatermarkGenerator::NextIdleDeadline(Clock::time_point now) const {
  Clock::time_point next = Clock::time_point::max();
  if (!config_.enabled || config_.idle_timeout_ms == 0) return next;
  for (const auto& [id, s] : splits_) {
    const Clock::time_point at = s.last_record + std::chrono::milliseconds(config_.idle_timeout_ms);
    if (at > now) next = std::min(next, at);
  }
  return next;
}

}  // namespace cairn

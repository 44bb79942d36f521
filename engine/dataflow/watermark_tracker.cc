#include "engine/dataflow/watermark_tracker.h"

#include <algorithm>

namespace cairn {

void WatermarkTracker::AddChannel(bool feedback) {
  ChannelWatermark c;
  c.feedback = feedback;
  channels_.push_back(c);
}

bool WatermarkTracker::OnWatermark(size_t ch, const Watermark& w) {
  ChannelWatermark& c = channels_[ch];
  if (c.feedback) return false;
  if (w.idle) {
    c.w.idle = true;
  } else {
    c.w.idle = false;
    c.w.timestamp = std::max(c.w.timestamp, w.timestamp);  // a channel's watermarks never go back
  }
  return Recompute();
}

bool WatermarkTracker::OnEndOfInput(size_t ch) {
  ChannelWatermark& c = channels_[ch];
  if (c.feedback) return false;
  c.w = Watermark{kMaxWatermark, false};
  return Recompute();
}

bool WatermarkTracker::Recompute() {
  bool any_active = false;
  int64_t min = kMaxWatermark;
  for (const ChannelWatermark& c : channels_) {
    if (c.feedback || c.w.idle) continue;
    any_active = true;
    min = std::min(min, c.w.timestamp);
  }
  bool changed = false;
  if (!any_active) {
    // Only counted channels make the task idle: without any (only feedback), nothing changes.
    bool counted = false;
    for (const ChannelWatermark& c : channels_) counted |= !c.feedback;
    if (counted && !combined_.idle) {
      combined_.idle = true;
      changed = true;
    }
    return changed;
  }
  if (combined_.idle) {
    combined_.idle = false;
    changed = true;
  }
  if (min > combined_.timestamp) {
    combined_.timestamp = min;
    changed = true;
  }
  return changed;
}

}  // namespace cairn

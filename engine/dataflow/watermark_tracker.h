// WatermarkTracker combines the watermarks of a task's input channels into the task's input
// watermark (Flink's StatusWatermarkValve): the minimum over the channels that are not idle,
// across all inputs of the head operator. A channel that ended its input counts as the final
// watermark; a channel that never sent one holds the minimum back (kMinWatermark). Feedback
// channels (cycles) are left out: a watermark can only come round them after this task sent it.
// The combined watermark never goes back: a channel that becomes active again behind it cannot
// lower it (its records may then be late). When every counted channel is idle, the combined
// status is idle.
//
// Contract: used by the input gate on the task thread only. Each On* call returns true when the
// combined watermark advanced or its idle status changed; combined() is then the new value.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/dataflow/stream_element.h"

namespace cairn {

class WatermarkTracker {
 public:
  // Before the first On* call, one per channel in gate order.
  void AddChannel(bool feedback);
  // Channel `ch` delivered watermark `w` (regular or idle).
  bool OnWatermark(size_t ch, const Watermark& w);
  // Channel `ch` ended its input: from now on it counts as the final watermark.
  bool OnEndOfInput(size_t ch);
  // The combined watermark (idle: every counted channel is idle).
  const Watermark& combined() const { return combined_; }
  // Channel `ch`'s last watermark, for diagnostics.
  const Watermark& channel(size_t ch) const { return channels_[ch].w; }

 private:
  struct ChannelWatermark {
    Watermark w;
    bool feedback = false;
  };
  bool Recompute();

  std::vector<ChannelWatermark> channels_;
  Watermark combined_;
};

}  // namespace cairn

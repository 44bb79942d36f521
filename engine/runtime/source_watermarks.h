// SourceWatermarkGenerator makes a source task's watermarks from the event times of the
// records its source emits (a source's `watermark:`, docs/configuration.md "Event time").
//
// It keeps, per split of a SplitSource (engine/dataflow/operator_capabilities.h), or for the
// whole source otherwise, the largest event time seen (field `field`, int64 ms; nulls are not
// event times) and when the split's last record came. A split is idle once idle_timeout passed
// without a record (never with idle_timeout 0). The watermark is the minimum, over the splits
// that are not idle, of max - max_out_of_orderness - 1 (Flink's BoundedOutOfOrderness; a split
// without records yet gives kMinWatermark, holding the others back); the source is idle when
// every split is (a subtask that reads no split at once). The task emits the watermark when it
// passes the last one emitted, so what it emits only grows.
//
// Thread-safety: the task thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "engine/dataflow/operator_capabilities.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/stream_element.h"

namespace cairn {

// How a source task makes watermarks (a source's `watermark:`): after each batch whose largest
// event time passed the largest so far, the watermark max - max_out_of_orderness - 1 ms; after
// idle_timeout without a record, an idle watermark; at the end of input, the final watermark.
struct SourceWatermarks {
  bool enabled = false;
  int field = -1;
  int64_t max_out_of_orderness_ms = 0;
  int64_t idle_timeout_ms = 0;  // 0: never idle
};

class SourceWatermarkGenerator {
 public:
  using Clock = std::chrono::steady_clock;

  // `splits`: the source when it is a SplitSource, else null (one split). Not enabled: every
  // call is a no-op and Current says no watermark, never idle.
  void Start(const SourceWatermarks& config, const SplitSource* splits, Clock::time_point now);
  bool enabled() const { return config_.enabled; }

  // The records of one batch, before the task emits them.
  void OnRecords(const RecordBatch& batch, Clock::time_point now);

  struct Current {
    // kMinWatermark: none yet. When idle: the watermark of the splits that went idle last,
    // which the task sends (if it passes what it sent) before it goes idle.
    int64_t watermark = kMinWatermark;
    bool idle = false;  // every split is idle
  };
  // The watermark and idleness now (after records, or after a poll without any). Asks the
  // SplitSource which splits it reads.
  Current Now(Clock::time_point now);

  // When Now may next change without a record (the next split to go idle after `now`); max
  // when never.
  Clock::time_point NextIdleDeadline(Clock::time_point now) const;

 private:
  struct Split {
    int64_t max_event_time = kMinWatermark;
    Clock::time_point last_record;
  };
  bool Idle(const Split& s, Clock::time_point now) const {
    return config_.idle_timeout_ms > 0 && now - s.last_record >= std::chrono::milliseconds(config_.idle_timeout_ms);
  }
  Split& SplitOf(int64_t id, Clock::time_point now);

  SourceWatermarks config_;
  const SplitSource* source_ = nullptr;
  int split_field_ = -1;
  std::map<int64_t, Split> splits_;  // by split id; the one split under id 0 without a SplitSource
  std::vector<int64_t> active_;      // scratch for ActiveSplits
};

}  // namespace cairn

// A StreamElement is what travels through a channel: a record batch, a checkpoint barrier, a
// watermark, the end of input, or the end of the stream. Elements on one channel are delivered
// in FIFO order.
//
// A watermark (event time, docs/architecture.md "Event time") says that the producer will send
// no more records with an event time at or below it (late records aside); it travels in band,
// after the records it follows. An idle watermark says the producer sends nothing for now: the
// consumer leaves the channel out of its minimum until a regular watermark (or end of input)
// comes on it again. Watermarks are never stored as channel state: after a restore they start
// again from the sources.
//
// End of input and end of stream are two steps, as in Flink: a bounded source that has read
// everything sends kEndOfInput (consumers run Finish and forward it) but keeps injecting
// barriers, so that a final checkpoint can cover everything Finish emitted; only after that
// checkpoint completed does it send kEndOfStream, after which the channel carries nothing.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/base/ids.h"
#include "engine/dataflow/record_batch.h"

namespace cairn {

// How a checkpoint is taken; carried by its barriers.
enum class CheckpointMode : uint8_t {
  kAligned = 0,
  kUnaligned = 1,
  kAtLeastOnce = 2,
};
const char* CheckpointModeName(CheckpointMode m);

// The marker of Chandy–Lamport: everything a channel carried before it belongs to the checkpoint.
struct Barrier {
  CheckpointId id = 0;
  int64_t trigger_time_ms = 0;  // wall clock at the coordinator (Unix ms)
  CheckpointMode mode = CheckpointMode::kAligned;
  int64_t aligned_timeout_ms = 0;  // aligned mode: switch to unaligned after this long (0 = never)
};

// What travels on a channel's priority lane, overtaking the data lane: an unaligned barrier, or
// the announcement that an aligned barrier was put on the data lane. `position` is the number
// of records the producer had put on the channel before the barrier: the consumer's records
// with a smaller index are in flight before the barrier.
struct PriorityEvent {
  enum class Kind : uint8_t { kUnalignedBarrier, kAnnouncement };
  Kind kind = Kind::kUnalignedBarrier;
  Barrier barrier;
  uint64_t position = 0;
};

// Event time in ms (Unix epoch, as timestamps in records).
inline constexpr int64_t kMinWatermark = INT64_MIN;  // no watermark yet
inline constexpr int64_t kMaxWatermark = INT64_MAX;  // the final watermark: the input ended

struct Watermark {
  int64_t timestamp = kMinWatermark;
  bool idle = false;  // the producer is idle (timestamp: its last watermark)
  bool operator==(const Watermark& o) const { return timestamp == o.timestamp && idle == o.idle; }
};

struct StreamElement {
  enum class Kind : uint8_t { kBatch, kBarrier, kWatermark, kEndOfInput, kEndOfStream };
  Kind kind = Kind::kBatch;
  Barrier barrier;                     // when kind == kBarrier
  Watermark watermark;                 // when kind == kWatermark
  std::unique_ptr<RecordBatch> batch;  // when kind == kBatch

  static StreamElement OfBatch(std::unique_ptr<RecordBatch> b) {
    StreamElement e;
    e.kind = Kind::kBatch;
    e.batch = std::move(b);
    return e;
  }
  static StreamElement OfBarrier(const Barrier& b) {
    StreamElement e;
    e.kind = Kind::kBarrier;
    e.barrier = b;
    return e;
  }
  static StreamElement OfWatermark(const Watermark& w) {
    StreamElement e;
    e.kind = Kind::kWatermark;
    e.watermark = w;
    return e;
  }
  static StreamElement EndOfInput() {
    StreamElement e;
    e.kind = Kind::kEndOfInput;
    return e;
  }
  static StreamElement EndOfStream() {
    StreamElement e;
    e.kind = Kind::kEndOfStream;
    return e;
  }
};

}  // namespace cairn

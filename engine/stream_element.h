// A StreamElement is what travels through a channel: a record batch, a checkpoint barrier, the
// end of input, or the end of the stream. Elements on one channel are delivered in FIFO order.
//
// End of input and end of stream are two steps, as in Flink: a bounded source that has read
// everything sends kEndOfInput (consumers run Finish and forward it) but keeps injecting
// barriers, so that a final checkpoint can cover everything Finish emitted; only after that
// checkpoint completed does it send kEndOfStream, after which the channel carries nothing.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/record_batch.h"

namespace cairn {

using CheckpointId = uint64_t;

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
  int64_t trigger_time_ms = 0;  // wall clock at the coordinator, for statistics
  CheckpointMode mode = CheckpointMode::kAligned;
};

struct StreamElement {
  enum class Kind : uint8_t { kBatch, kBarrier, kEndOfInput, kEndOfStream };
  Kind kind = Kind::kBatch;
  Barrier barrier;                     // when kind == kBarrier
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

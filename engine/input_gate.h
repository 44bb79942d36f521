// InputGate is where records enter a task: it reads the task's input channels fairly and runs
// the checkpoint barrier protocol on them (the BarrierAligner), turning channel elements into
// task events: a batch to process, a checkpoint to take, the end of input, the end of stream.
//
// Aligned mode (exactly-once, Flink ABS): after the barrier of checkpoint n arrives on one
// channel, that channel is blocked (not read) until barrier n has arrived on every channel
// still open; then the gate reports the checkpoint with how long the alignment took and
// unblocks all channels. Since channels are FIFO and every barrier follows all records sent
// before it, the snapshot reflects exactly the records before the barriers.
//
// Contract: used by the task thread only; Poll never blocks.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "engine/channel.h"

namespace cairn {

struct GateInput {
  Channel* channel;
  int input_index;  // which of the head operator's logical inputs this channel feeds
};

struct GateEvent {
  enum class Kind { kNone, kBatch, kCheckpoint, kEndOfInput, kEndOfStream };
  Kind kind = Kind::kNone;
  int input_index = 0;                // kBatch
  Channel* channel = nullptr;         // kBatch: where to recycle the batch
  std::unique_ptr<RecordBatch> batch; // kBatch
  Barrier barrier;                    // kCheckpoint
  int64_t alignment_ms = 0;           // kCheckpoint: first barrier to last
};

class InputGate {
 public:
  InputGate() = default;
  // Before the task starts.
  void AddInput(GateInput in) {
    inputs_.push_back(in);
    state_.emplace_back();
  }

  GateEvent Poll();
  bool empty() const { return inputs_.empty(); }
  // True when a readable (unblocked, open) channel has data.
  bool HasReadableData() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct State {
    bool blocked = false;       // barrier of the aligning checkpoint received
    bool end_of_input = false;
    bool end_of_stream = false;
  };
  GateEvent OnBarrier(size_t ch, const Barrier& b);
  bool AlignmentComplete() const;
  GateEvent FinishAlignment();

  std::vector<GateInput> inputs_;
  std::vector<State> state_;
  size_t next_ = 0;  // round-robin start
  size_t ended_input_ = 0;
  size_t ended_stream_ = 0;
  bool end_of_input_reported_ = false;
  bool end_of_stream_reported_ = false;

  // BarrierAligner state.
  bool aligning_ = false;
  Barrier aligning_barrier_;
  size_t barriers_received_ = 0;
  Clock::time_point alignment_start_;
};

}  // namespace cairn

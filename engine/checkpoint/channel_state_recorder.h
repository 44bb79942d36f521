// ChannelStateRecorder is the Chandy–Lamport channel recording of one subtask: for every
// checkpoint the subtask took while records were still in flight to it, it copies, per input
// channel, the records that were sent before that channel's barrier but processed after the
// snapshot (positions [start, end) of the channel, start being the channel's consumed position at
// the snapshot and end the position of its barrier, once known). Flink calls this the
// ChannelStateWriter. An aligned checkpoint without open feedback channels has nothing in flight
// across its cut and starts no recording (the task persists it at once).
//
// A recording copies what the task processes (OnProcessed) and reads the channel ahead up to the
// barrier's position (InputGate::ReadAhead), so that it completes without waiting for the task to
// work through the backlog: that is what makes unaligned checkpoints fast under backpressure.
// A recording of a feedback channel is bounded like the channel's queue: past the channel's
// backlog limit (checkpoint.max_feedback_backlog) the channel's BacklogListener is told, once,
// and the job fails.
//
// A rebalance slot (a load-balanced edge, engine/dataflow/rebalance_queue.h) is not FIFO, so
// no position ends its part: Lai and Yang's rule records instead every batch of an older colour
// than the checkpoint (sent before its producer's snapshot) processed after this subtask's
// snapshot, and the part closes when Mattern's count says every such batch of the edge was
// processed (RebalanceQueue::View::white_complete), or when the slot ended its stream. While a
// part of an unaligned checkpoint is open, the slot's queue is read ahead (up to its capacity)
// into the gate, its white batches recorded and counted at once (then processed later, not
// recorded again); an aligned one waits for them to be processed instead. The
// finished records carry the slot's counts for the coordinator.
//
// Contract: used by the task thread only, with the gate it was made for (which outlives it).
// Recordings complete in checkpoint order (TakeFinished).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/input_gate.h"

namespace cairn {

// The in-flight records of one checkpoint, per input channel (gate order).
struct ChannelStateRecords {
  CheckpointId id = 0;
  std::vector<std::string> channel_names;
  std::vector<SchemaRef> schemas;
  std::vector<RecordBatch> records;
  std::vector<RebalanceCount> rebalance_counts;  // one per rebalance slot
};

class ChannelStateRecorder {
 public:
  // A channel's end position that is not known yet (its barrier has not come).
  static constexpr uint64_t kUnknown = ~0ull;

  explicit ChannelStateRecorder(InputGate* gate) : gate_(gate) {}

  // Starts recording checkpoint `id` at every channel's consumed position; ends[ch] is where the
  // channel's part ends, or kUnknown until SetEnd. Reads nothing ahead yet (AdvanceAll, SetEnd).
  // `read_ahead` (unaligned checkpoints): its open rebalance parts read their queue ahead.
  void Start(CheckpointId id, std::vector<uint64_t> ends, bool read_ahead = false);
  // Copies what is known of checkpoint `id`'s channels now, reading them ahead.
  void Advance(CheckpointId id);
  // Channel `slot`'s part of checkpoint `id` ends at `end` (if not known already); copies it.
  void SetEnd(size_t slot, CheckpointId id, uint64_t end);
  // Channel `slot` ended its stream: every part of it still open ends at what it delivered.
  void OnChannelEnded(size_t slot);
  // Rows [begin, end) of `batch` from `slot` are about to be processed (before the gate counts
  // them): they are copied into every recording that wants them.
  void OnProcessed(size_t slot, const RecordBatch& batch, size_t begin, size_t end);
  // Copies what is known of every recording now, reading the channels ahead, and closes the
  // rebalance parts whose white batches were all processed.
  void AdvanceAll();
  // True when AdvanceAll would close a rebalance part.
  bool RebalanceClosable() const;
  // The oldest recording, once every channel's part of it is complete; otherwise null.
  std::unique_ptr<ChannelStateRecords> TakeFinished();
  bool recording(CheckpointId id) const { return recordings_.count(id) > 0; }
  // One line per recording, for diagnostics.
  std::string Describe() const;

 private:
  struct Recording {
    std::unique_ptr<ChannelStateRecords> records;
    std::vector<uint64_t> start;   // channel position at the snapshot
    std::vector<uint64_t> end;     // position of the channel's barrier; kUnknown until it is known
    std::vector<uint64_t> copied;  // records below this position are copied (or not needed)
    // Rebalance slots: the part is open (not every white batch processed yet); the counts.
    std::vector<char> rebalance_open;
    std::vector<uint64_t> received_before, received_after;
    bool read_ahead = false;
  };
  void CloseRebalance(CheckpointId id, Recording& r);
  void ReadAheadRebalance(size_t slot);
  void Advance(Recording& r, size_t slot);
  static void CopyRange(const RecordBatch& b, uint64_t first_pos, size_t first_row, size_t rows, Recording& r,
                        size_t slot);
  // Tells the channel's BacklogListener (once) when recording `id` holds more of feedback
  // channel `slot`'s records than the channel's backlog limit.
  void CheckRecordingBound(CheckpointId id, const Recording& r, size_t slot);

  InputGate* const gate_;
  std::map<CheckpointId, Recording> recordings_;
  bool recording_bound_reported_ = false;
};

}  // namespace cairn

// InputGate is where records enter a task: it reads the task's input channels fairly (round
// robin), restored records first, and counts the end of input and the end of stream. It knows
// nothing of checkpoint modes: the barrier handler (engine/checkpoint/barrier_handler.h) decides
// what a barrier means and acts on the gate through the narrow interface below (block a channel,
// read a channel ahead up to a position, the channel positions).
//
// Positions: every channel counts the records it delivered, in one numbering that starts with the
// restored records (if any) and continues with what the producer sends. consumed(ch) is what the
// task processed (MarkProcessed), received(ch) what was taken off the channel's queue (into the
// task, the stash or the overflow). Priority events are handed out in this numbering.
//
// Reading: a scan (BeginScan, then ReadNext until it reports kDone) visits the readable channels
// once each, in round-robin order, and takes one element from each until one needs the caller:
// a batch (held in the stash until TakeStash, so that the caller can first drain that channel's
// priority lane: a priority event is always looked at before the data it overtook), a barrier, a
// change of the combined watermark (WatermarkTracker: the minimum over the channels that are not
// idle; a channel's end of input counts as the final watermark), the end of input of every
// channel, or a channel's end of stream. A channel is readable unless it is
// blocked or ended its stream; while restored records wait on some channel, only such channels
// are read. Feedback channels (they close a cycle) do not count towards the end of input or end
// of stream, nor as open channels.
//
// Rebalance slots (engine/dataflow/rebalance_queue.h): a slot reading a load-balanced edge's
// shared queue. Its batches carry colours; the slot turns them into the edge's barriers for
// this consumer, in checkpoint order: a batch of a newer colour than the slot's last barrier is
// held while the barriers up to its colour are reported (kBarrier; the handler may block the
// slot, as for a channel), then delivered; with nothing to read, a checkpoint every producer
// snapshotted is reported as a barrier too (an idle consumer must snapshot as well). Its end of
// input comes once every producer ended its input and the queue is empty, after the barriers
// of the checkpoints a producer took before its end of input and before the later ones; its end
// of stream once every producer ended the stream. It has no watermarks (records come out of
// order): it holds the input watermark at its minimum until its end of input.
//
// Contract: used by the task thread only; nothing here blocks. Channels are owned by the runner
// and outlive the gate.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/channel.h"
#include "engine/dataflow/rebalance_queue.h"
#include "engine/dataflow/watermark_tracker.h"

namespace cairn {

struct GateInput {
  Channel* channel;
  int input_index;        // which of the head operator's logical inputs this channel feeds
  bool feedback = false;  // closes a cycle: not counted for end of input/stream or as open
  // A load-balanced edge: the slot reads this shared queue; `channel` is only its stand-in
  // (name, schema, an always empty priority lane). See "Rebalance slots" above.
  RebalanceQueue* rebalance = nullptr;
};

class InputGate {
 public:
  // What ReadNext took off a channel.
  enum class Read {
    kDone,             // the scan is over: no readable channel had anything
    kBatch,            // a batch, now in the stash (TakeStash)
    kBarrier,          // a barrier from the data lane
    kWatermark,        // the combined watermark advanced or its idle status changed: watermark()
    kEndOfInput,       // the last regular channel's end of input (reported once)
    kChannelEndOfInput,   // one channel's end of input (not the last)
    kChannelEndOfStream,  // one channel's end of stream: it is read no more
  };
  // One round-robin pass over the channels.
  struct Scan {
    size_t first = 0;
    size_t k = 0;
  };
  // Visits records taken off a channel but not processed yet: rows [first_row, first_row + rows)
  // of `batch`, which lie at channel positions [position, position + rows).
  using RecordVisitor =
      std::function<void(const RecordBatch& batch, uint64_t position, size_t first_row, size_t rows)>;

  InputGate() = default;
  // Before the task starts.
  void AddInput(GateInput in);
  // Restore: `records` were in flight on channel `slot` when the restored checkpoint was taken.
  // They are read before anything the channel brings now, and count as part of the channel.
  // Until every channel's restored records have been delivered, no new data is read (from any
  // channel): after a rescale, records of one key may have been recorded on another channel than
  // the one that now brings that key's new records, and must come first. Before reading.
  void AddRestored(size_t slot, RecordBatch records);

  // Reading.
  Scan BeginScan() const { return Scan{next_, 0}; }
  // The next element of the scan (see the file comment); *slot is its channel, *barrier the
  // barrier when kBarrier.
  Read ReadNext(Scan* scan, size_t* slot, Barrier* barrier);
  // True while a batch read by ReadNext waits in the stash.
  bool has_stash() const { return stash_ != nullptr; }
  size_t stash_slot() const { return stash_slot_; }
  // Hands the stashed batch to the task: it is the batch in progress until MarkProcessed covered it.
  std::unique_ptr<RecordBatch> TakeStash();
  // Takes the next event off channel `slot`'s priority lane, its position in the gate's numbering.
  bool PopPriority(size_t slot, PriorityEvent* e);
  // The task calls this right before it processes rows [begin, end) of a batch from `slot`:
  // they count as consumed.
  void MarkProcessed(size_t slot, const RecordBatch& batch, size_t begin, size_t end);
  // The combined input watermark (after ReadNext reported kWatermark, its new value).
  const Watermark& watermark() const { return watermarks_.combined(); }
  // True once, when every regular channel ended its stream.
  bool TakeEndOfStream();

  // For the barrier handler.
  void Block(size_t slot) { state_[slot].blocked = true; }
  void UnblockAll();
  // Visits, in channel order from position consumed(slot), every record of channel `slot` taken
  // off its queue but not processed (the batch in progress, the stash, the overflow), then reads
  // the channel's queue ahead into the overflow while received(slot) < `end`, visiting each batch
  // read. Asks the producer for the records before `end` (Channel::WantUpTo).
  void ReadAhead(size_t slot, uint64_t end, const RecordVisitor& visit);
  uint64_t consumed(size_t slot) const { return state_[slot].consumed; }
  uint64_t received(size_t slot) const { return state_[slot].received; }
  bool feedback(size_t slot) const { return inputs_[slot].feedback; }
  RebalanceQueue* rebalance(size_t slot) const { return inputs_[slot].rebalance; }
  // Rebalance slots: items of a colour below `id` this subtask processed completely.
  uint64_t DeliveredBelow(size_t slot, CheckpointId id) const;
  // Rebalance slots: the colour of the batch in progress (or in the stash, before TakeStash),
  // and whether it was counted already (read ahead into a record: Delivered when read).
  CheckpointId in_progress_colour() const { return in_progress_colour_; }
  bool in_progress_counted() const { return in_progress_counted_; }
  // Rebalance slots: items taken off the shared queue but not delivered yet, oldest first.
  struct AheadItem {
    std::unique_ptr<RecordBatch> batch;
    CheckpointId colour = 0;
    bool counted = false;  // Delivered (local and edge counts) already: recorded when read ahead
    bool restored = false; // from the restored lane: not released to the queue
  };
  std::deque<AheadItem>& rebalance_ahead(size_t slot) { return state_[slot].ahead; }
  // Takes the next item off rebalance slot `slot`'s queue into its list, if fewer than `limit`
  // wait there (a recorder reading ahead); null when none. Asks nothing of the producers.
  AheadItem* ReadAheadRebalance(size_t slot, size_t limit);
  // Rebalance slots: the barrier of an unaligned checkpoint some producer took, reported at
  // once, before the batches the slot holds (a snapshot may come any time before the first
  // batch of the new colour: Lai–Yang), as an unaligned barrier overtakes a channel's data.
  // Only while no producer ended its input (then the order of the end of input rules).
  bool EagerRebalanceBarrier(size_t slot, Barrier* b) const;
  // The slot's barriers up to `id` were reported.
  void RebalanceBarrierReported(size_t slot, CheckpointId id) { state_[slot].barrier_done = id; }
  // Counts an item of colour `colour` of rebalance slot `slot` as received (Mattern's count).
  void CountDelivered(size_t slot, CheckpointId colour);
  // Visits what rebalance slot `slot` has taken off its queue and not processed: the rest of the
  // batch in progress, the stash, the read-ahead items (rows [first_row, size) of each batch).
  void VisitRebalanceUnprocessed(size_t slot,
                                 const std::function<void(const RecordBatch&, size_t first_row, CheckpointId colour,
                                                          bool counted)>& visit) const;
  bool end_of_stream(size_t slot) const { return state_[slot].end_of_stream; }
  // Channels that are not feedback channels and have not ended their stream.
  size_t OpenChannels() const { return regular_ - ended_stream_; }

  size_t size() const { return inputs_.size(); }
  bool empty() const { return inputs_.empty(); }
  const std::vector<GateInput>& inputs() const { return inputs_; }
  // True when a read may find something: a stashed batch, a priority event, data on a readable
  // channel.
  bool HasWork() const;
  // True when a priority event waits on some channel.
  bool HasPriorityWork() const;
  // One line per channel, for `kill -USR1` diagnostics.
  std::string Describe() const;

 private:
  struct ChannelState {
    bool blocked = false;
    bool end_of_input = false;
    bool end_of_stream = false;
    uint64_t consumed = 0;              // records processed by the task (MarkProcessed)
    uint64_t received = 0;              // records taken off the channel's queue
    uint64_t restored = 0;              // restored records ahead of the producer's position 0
    bool restored_pending = false;      // the restored records are still at the overflow's front
    std::deque<StreamElement> overflow; // taken off the queue ahead of time; read before it
    // Rebalance slots. The front of `ahead` waits for the barriers its colour brings.
    std::deque<AheadItem> ahead;
    CheckpointId barrier_done = 0;      // the newest barrier reported on the slot
    std::map<CheckpointId, uint64_t> delivered;  // colour -> items processed completely
  };
  bool PopElement(size_t ch, StreamElement* e);
  // What the rebalance slot reads next; kDone when nothing now.
  Read ReadRebalance(size_t ch, Barrier* barrier);
  // The barrier a rebalance slot with nothing held reports now, if any; `view` as looked.
  bool IdleRebalanceBarrier(size_t ch, const RebalanceQueue::View& view, Barrier* b) const;
  // A channel's end of input / end of stream, counted.
  Read EndInput(size_t ch);
  Read EndStream(size_t ch);

  std::vector<GateInput> inputs_;
  WatermarkTracker watermarks_;
  std::deque<ChannelState> state_;  // a deque: ChannelState is not copyable
  size_t next_ = 0;  // round-robin start
  size_t regular_ = 0;  // channels that are not feedback channels
  size_t restored_pending_ = 0;  // channels whose restored records have not been delivered
  size_t ended_input_ = 0;
  size_t ended_stream_ = 0;
  bool end_of_input_reported_ = false;
  bool end_of_stream_reported_ = false;

  // The batch the task is processing (delivered, maybe partly processed).
  const RecordBatch* in_progress_ = nullptr;
  size_t in_progress_slot_ = 0;
  size_t in_progress_offset_ = 0;
  // A popped batch held back while the events that precede it are reported.
  std::unique_ptr<RecordBatch> stash_;
  size_t stash_slot_ = 0;
  CheckpointId stash_colour_ = 0;
  CheckpointId in_progress_colour_ = 0;
  bool stash_counted_ = false;
  bool in_progress_counted_ = false;
};

}  // namespace cairn

// OutputGate is where a task's records leave it: it partitions the chain tail's output batches
// onto the outgoing channels (forward: one channel; hash: by key group of the record key) and
// puts barriers and end markers on every outgoing channel in order.
//
// Contract: used by the task thread only. Records are buffered per channel up to a batch size;
// Flush() pushes partial batches (the task calls it before it parks and before any barrier or
// end marker, so a record never waits behind an idle producer). Emit and Broadcast may block
// on backpressure (calling the BlockedHandler while they wait); they return false once the
// job is cancelled. Each channel's records are numbered in the order they are assigned to it;
// BroadcastPriority stamps every channel's event with the number assigned so far, which is
// where the event belongs in that channel even though it overtakes the queued data.
// Emit assigns every record of a batch to its channels on every edge before it pushes anything,
// so a snapshot taken while one of its pushes is blocked never splits the batch: on every
// channel the whole batch lies before the barrier (fan-out edges included).
#pragma once

#include <memory>
#include <vector>

#include "engine/dataflow/channel.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/rebalance_queue.h"
#include "engine/dataflow/record_codec.h"

namespace cairn {

class OutputGate {
 public:
  explicit OutputGate(uint32_t max_parallelism) : max_parallelism_(max_parallelism) {}
  void set_blocked_handler(BlockedHandler* h) { handler_ = h; }

  void AddForwardEdge(Channel* ch);
  // Records go to the channel of the subtask owning their key group; `key` selects the key
  // fields of the records emitted (the consumer's key_by). The batches pushed carry each
  // record's key hash (RecordBatch::HasKeyHashes for key.fields()), which the consumer may use
  // instead of hashing the key again.
  void AddHashEdge(std::vector<Channel*> channels, KeySelector key);
  // A load-balanced edge: batches go to the shared queue, coloured with this producer's last
  // snapshot (RebalanceQueue). `index` is this producer's subtask; `self` its task's parker.
  // Barriers change the colour instead of travelling; watermarks do not cross the edge.
  void AddRebalanceEdge(RebalanceQueue* queue, uint32_t index, Parker* self);
  // The Mattern counts of the rebalance edges for checkpoint `id`, as reported when its barrier
  // went out (Broadcast or BroadcastPriority); empty when there are none.
  std::vector<RebalanceCount> RebalanceCounts(CheckpointId id) const;

  // Takes the records of `batch` (leaving it empty, possibly with another batch's capacity).
  bool Emit(RecordBatch* batch);
  bool Flush();
  // Flushes, then puts `e` (a barrier, watermark or end marker, copied) on every outgoing channel.
  bool Broadcast(const StreamElement& e);
  // Puts `e` on every channel's priority lane, stamped with that channel's position. Never blocks.
  void BroadcastPriority(PriorityEvent e);
  bool has_outputs() const { return !edges_.empty() || !rebalance_.empty(); }
  uint64_t records_out() const { return records_out_; }
  // Time blocked on full outgoing channels, summed over them (any thread: the channel list is
  // fixed before the task runs).
  uint64_t blocked_ns() const {
    uint64_t ns = 0;
    for (const Edge& e : edges_)
      for (const Target& t : e.targets) ns += t.channel->blocked_ns();
    for (const Rebalance& r : rebalance_) ns += r.queue->blocked_ns();  // shared by the edge's producers
    return ns;
  }

 private:
  struct Target {
    Channel* channel;
    std::unique_ptr<RecordBatch> pending;
    // Batches of kBatchRecords cut off pending while a hash edge assigns one emitted batch
    // (pushed in order before pending), so that a batch on a channel holds at most about
    // kBatchRecords records however many the emitted batch had (a batch of lines tokenized
    // into ten times as many words): channels of kChannelCapacity batches then hold what they
    // are sized for, which is also what an unaligned checkpoint persists of them.
    std::vector<std::unique_ptr<RecordBatch>> full;
    uint64_t assigned = 0;  // records ever assigned to this channel (pushed, full or pending)
  };
  struct Edge {
    bool hash;
    std::vector<Target> targets;
    KeySelector key;  // hash edges
    std::vector<uint16_t> target_of;  // hash edges: key group -> index into targets (parallelism <= max_parallelism <= 32768)
  };
  bool PushFull(Target* t);     // the full batches, in order
  bool PushPending(Target* t);  // the full batches, then pending
  // The full batches of all of a hash edge's targets (Channel::PushEach), so that a consumer
  // waiting for its batches (an unaligned read-ahead) is not kept waiting behind another
  // target's full channel.
  bool PushFullEach(Edge* e);
  // Moves pending (of kBatchRecords records) to full and starts a new one.
  void Seal(Target* t, const std::vector<int>& hash_fields);
  // One producer's side of a load-balanced edge.
  struct Rebalance {
    RebalanceQueue* queue;
    uint32_t index;
    Parker* self;
    std::unique_ptr<moodycamel::ProducerToken> token;
    std::unique_ptr<RecordBatch> pending;
    std::vector<RebalanceItem> sealed;  // white batches cut off by an unaligned barrier, in order
    CheckpointId colour = 0;
    uint64_t sent = 0;  // items handed over (sealed or pushed), all of a colour <= colour
    CheckpointId reported_id = 0;
    uint64_t reported = 0;
  };
  bool PushRebalance(Rebalance* r);  // the sealed batches, then the pending one
  void Recolour(Rebalance* r, const Barrier& b);

  static constexpr size_t kBatchRecords = 2048;
  const uint32_t max_parallelism_;
  std::vector<Edge> edges_;
  std::vector<Rebalance> rebalance_;
  uint64_t records_out_ = 0;
  BlockedHandler* handler_ = nullptr;
  std::string scratch_;  // composite keys
  std::vector<uint64_t> hashes_;  // of the batch being emitted, per record
  std::vector<std::vector<uint32_t>> rows_of_;  // of the batch being emitted, per target
  std::vector<Channel*> push_channels_;  // PushFullEach's scratch
  std::vector<std::vector<std::unique_ptr<RecordBatch>>*> push_elements_;
};

}  // namespace cairn

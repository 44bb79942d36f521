// A RebalanceQueue is a load-balanced edge (`inputs: [{from: P, partition: rebalance}]`): every
// producer subtask pushes its batches into one bounded moodycamel ConcurrentQueue (MPMC), and
// whichever consumer subtask is free takes the next one, so a slow or busy consumer does not
// hold the stage back. Such an edge is not FIFO per producer-consumer pair, so no barrier can
// travel on it; checkpoints cross it by Lai and Yang's colouring with Mattern's counters
// (docs/architecture.md, "Load-balanced edges"):
//
// - Every item carries its producer's colour: the id of the last checkpoint the producer
//   snapshotted (0 before its first one in this run).
// - A producer that snapshots checkpoint k reports how many items it had sent (all of colour
//   < k: the white items of k) with the checkpoint's Barrier (ProducerSnapshotted).
// - Consumers count the items they processed, by colour (Delivered). Checkpoint k's white items
//   have all been processed once every producer snapshotted k and, summed over the edge, the
//   items of colour < k processed equal those sent before the producers' snapshots
//   (white_complete(): Mattern's termination). Then every consumer's record of k's in-flight
//   items is complete.
// - The consumer side (InputGate) turns this into barriers of the edge: the first item of a
//   newer colour than the consumer's last barrier brings that checkpoint's barrier first, and
//   once every producer snapshotted k, an idle consumer gets k's barrier without an item (the
//   nudge), so that it snapshots too.
// - End of input and end of stream of the edge: once every producer sent it (and the queue is
//   empty, for the end of input).
// - Restore: the recorded items go on a restored lane that consumers empty before the queue;
//   they count as sent by producer subtask 0.
//
// Contract: Add* before the job starts (one thread). Producer calls from producer task threads,
// each with its own token; consumer calls from consumer task threads. A full queue is
// backpressure: Push parks the producer (calling the BlockedHandler, as Channel::Push does).
// Every push and every change of the counters wakes the consumers' parkers; every pop from a
// queue with parked producers wakes them. Nothing spins.
#pragma once

#include <concurrentqueue/concurrentqueue.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/mutex.h"
#include "engine/base/parker.h"
#include "engine/dataflow/channel.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/stream_element.h"

namespace cairn {

// One subtask's Mattern counts of one rebalance edge for one checkpoint, as acknowledged to the
// coordinator: items sent before the producer's snapshot (producers), items of an older colour
// processed before and after the consumer's snapshot (consumers).
struct RebalanceCount {
  std::string edge;
  uint64_t sent = 0;
  uint64_t received_before = 0;
  uint64_t received_after = 0;
};

struct RebalanceItem {
  std::unique_ptr<RecordBatch> batch;
  CheckpointId colour = 0;
  bool restored = false;  // from the restored lane (not counted against the capacity)
};

class RebalanceQueue {
 public:
  // `name` is "<producer>[*]-><consumer>[*]" (the name of its channel state); `capacity` in items.
  RebalanceQueue(std::string name, size_t capacity, uint32_t producers);

  const std::string& name() const { return name_; }
  const SchemaRef& schema() const { return schema_; }
  void set_schema(SchemaRef s) { schema_ = std::move(s); }
  uint32_t producers() const { return producers_; }
  size_t capacity() const { return capacity_; }

  // Before the job starts.
  void AddProducer(Parker* p) { producer_parkers_.push_back(p); }
  void AddConsumer(Parker* p) { consumer_parkers_.push_back(p); }
  // Records in flight on this edge in the restored checkpoint: read before anything new.
  void AddRestored(RecordBatch records);

  // ---- Producers ----
  std::unique_ptr<moodycamel::ProducerToken> MakeProducerToken() {
    return std::make_unique<moodycamel::ProducerToken>(queue_);
  }
  // Blocks (parking `self`) while the queue is full, unless the item is white for a checkpoint
  // whose white items are not all received (a consumer's record waits for it, as a FIFO
  // channel lets the records before a wanted position through). False once cancelled or the
  // handler gave up.
  bool Push(moodycamel::ProducerToken* token, RebalanceItem&& item, Parker* self, BlockedHandler* handler);
  std::unique_ptr<RecordBatch> TakeEmptyBatch();
  // Producer `index` snapshotted checkpoint `b` after sending `sent` items (all of an older
  // colour). Returns the count it reports (with the restored items for producer 0).
  uint64_t ProducerSnapshotted(uint32_t index, const Barrier& b, uint64_t sent);
  // A producer of colour `colour` sent its end of input (after its last item) / end of stream.
  void ProducerEndedInput(CheckpointId colour);
  void ProducerEndedStream();
  // Total time producers were blocked on the full queue.
  uint64_t blocked_ns() const { return blocked_ns_.load(std::memory_order_relaxed); }

  // ---- Consumers ----
  // The restored lane first, then the queue. Non-blocking. An item taken (but for a restored
  // one) counts against the capacity until Release: a consumer may take items ahead of
  // processing them (an unaligned record reads the queue ahead) without letting more in.
  bool TryPop(RebalanceItem* item);
  void Release();
  bool HasData() const { return queued_.load(std::memory_order_seq_cst) > 0 || restored_left_.load() > 0; }
  size_t SizeApprox() const { return queued_.load(std::memory_order_relaxed); }
  void Recycle(std::unique_ptr<RecordBatch> b);
  // A consumer processed the last record of an item of colour `colour`.
  void Delivered(CheckpointId colour);

  struct View {
    CheckpointId all_snapshotted = 0;  // every producer snapshotted every checkpoint up to this one
    CheckpointId white_complete = 0;   // every white item of checkpoints up to this one was processed
    bool any_ended_input = false;
    bool all_ended_input = false;
    CheckpointId end_colour = 0;       // all_ended_input: the newest colour a producer ended its input with
    bool all_ended_stream = false;
  };
  View Look() const EXCLUDES(mu_);
  // The barrier of the oldest checkpoint above `after`, at most `upto`, that some producer
  // snapshotted; false when there is none.
  bool NextBarrier(CheckpointId after, CheckpointId upto, Barrier* b) const EXCLUDES(mu_);

  // Wakes and releases blocked producers; later pushes fail. Any thread.
  void Cancel();
  std::string Describe() const EXCLUDES(mu_);

 private:
  // Mattern's test for the checkpoints every producer snapshotted. True when it advanced.
  bool CheckComplete() REQUIRES(mu_);
  void WakeConsumers();

  const std::string name_;
  const size_t capacity_;
  const uint32_t producers_;
  SchemaRef schema_;
  std::vector<Parker*> producer_parkers_;
  std::vector<Parker*> consumer_parkers_;
  moodycamel::ConcurrentQueue<RebalanceItem> queue_;
  moodycamel::ConcurrentQueue<RebalanceItem> restored_;
  moodycamel::ConcurrentQueue<std::unique_ptr<RecordBatch>> recycled_;
  uint64_t restored_items_ = 0;                // set before the start
  std::atomic<int64_t> restored_left_{0};
  std::atomic<int64_t> queued_{0};             // items in queue_
  std::atomic<int64_t> unreleased_{0};         // items pushed and not released (queue_, consumers' slots)
  std::atomic<CheckpointId> newest_snapshotted_{0};  // the newest checkpoint some producer snapshotted
  std::atomic<CheckpointId> white_complete_{0};      // view_.white_complete, for pushes
  std::atomic<int> producers_waiting_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<uint64_t> blocked_ns_{0};

  mutable Mutex mu_;
  struct Snapshotted {
    uint32_t producers = 0;
    uint64_t sent = 0;
  };
  std::map<CheckpointId, Barrier> barriers_ GUARDED_BY(mu_);        // as the first producer took it
  std::map<CheckpointId, Snapshotted> snapshotted_ GUARDED_BY(mu_);  // not yet white-complete
  std::map<CheckpointId, uint64_t> delivered_ GUARDED_BY(mu_);       // colour -> items processed
  View view_ GUARDED_BY(mu_);
  uint32_t ended_input_ GUARDED_BY(mu_) = 0;
  uint32_t ended_stream_ GUARDED_BY(mu_) = 0;
};

}  // namespace cairn

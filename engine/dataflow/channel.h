// A Channel is the FIFO edge from one producer subtask to one consumer subtask: a bounded
// moodycamel ReaderWriterQueue (SPSC) of StreamElements (the data lane), a small priority lane
// beside it on which unaligned barriers and barrier announcements overtake the data, and a
// return queue through which the consumer hands emptied batches back for reuse.
//
// Contract: exactly one producer thread calls Push/PushPriority/TakeEmptyBatch, exactly one
// consumer thread calls TryPop/TryPopPriority/Recycle. A full data lane is backpressure: Push
// parks the producer (on its task's Parker) until the consumer frees a slot or the channel is
// cancelled; while parked it calls the BlockedHandler, so the producer's task can still take
// unaligned snapshots. The priority lane never blocks. Every push wakes the consumer's Parker.
// Nothing spins.
#pragma once

#include <readerwriterqueue/readerwriterqueue.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/record_batch.h"
#include "engine/base/parker.h"
#include "engine/base/status.h"
#include "engine/dataflow/stream_element.h"

namespace cairn {

// Called by a producer that is blocked on a full channel, before it parks and after each
// wake-up. Returns false to give up (the job is cancelled). *deadline: when to call it again
// at the latest (time_point::max() for no deadline).
class BlockedHandler {
 public:
  virtual ~BlockedHandler() = default;
  virtual bool OnBlocked(std::chrono::steady_clock::time_point* deadline) = 0;
};

// Hears that a feedback channel's backlog passed its limit, with a message naming the channel,
// the limit and the key to raise; the job must fail. Called on the producer's thread.
class BacklogListener {
 public:
  virtual ~BacklogListener() = default;
  virtual void BacklogExceeded(const Status& s) = 0;
};

class Channel {
 public:
  // `capacity` in elements (batches); `name` like "tokenize[0]->count[1]".
  // An `unbounded` channel (a feedback edge) never blocks its producer: it grows instead, up to
  // `backlog_limit` queued records (0: no limit); a push past it fails: the channel is
  // cancelled and `listener` told.
  Channel(std::string name, size_t capacity, Parker* producer, Parker* consumer, bool unbounded = false,
          uint64_t backlog_limit = 0, BacklogListener* listener = nullptr);

  const std::string& name() const { return name_; }
  bool unbounded() const { return unbounded_; }
  uint64_t backlog_limit() const { return backlog_limit_; }
  BacklogListener* backlog_listener() const { return listener_; }
  // The schema of the records on this channel (the producer's); set before the job starts.
  // Empty batches it hands out (TakeEmptyBatch) hold records of it.
  const SchemaRef& schema() const { return schema_; }
  void set_schema(SchemaRef s) { schema_ = std::move(s); }

  // Blocks while the channel is full. Returns false (dropping `e`) once Cancel() was called or
  // the handler gave up.
  bool Push(StreamElement&& e, BlockedHandler* handler = nullptr);
  // Push for one producer's several bounded channels (all of them sharing its Parker):
  // pushes `elements[i]` (moved from; null batches are skipped) in order onto
  // `channels[i]`, blocking only while none of the channels that still have elements to take
  // can take the next one, so that one full channel does not hold back another channel's
  // elements (which that channel's consumer may be waiting for: an unaligned read-ahead).
  // Returns false once a channel is cancelled or the handler gave up; then the elements not
  // pushed are left in place (pushed ones are null).
  static bool PushEach(const std::vector<Channel*>& channels,
                       const std::vector<std::vector<std::unique_ptr<RecordBatch>>*>& elements,
                       BlockedHandler* handler);
  // Total time the producer was blocked in Push (any thread, relaxed).
  uint64_t blocked_ns() const { return blocked_ns_.load(std::memory_order_relaxed); }
  void PushPriority(const PriorityEvent& e);
  bool TryPopPriority(PriorityEvent* e);
  bool HasPriority() const { return priority_.peek() != nullptr; }
  // Non-blocking; true when an element was taken.
  bool TryPop(StreamElement* e);
  // True when an element is waiting (consumer side).
  bool HasData() const { return queue_.peek() != nullptr; }
  // Number of elements queued (approximate from either side).
  size_t SizeApprox() const { return queue_.size_approx(); }

  // Consumer-side read-ahead (unaligned checkpoints read a channel ahead, up to a barrier's
  // position, into an overflow the consumer owns). Elements held there still count against the
  // capacity, so backpressure and memory stay bounded, except that the producer may always
  // push records before the wanted position: the consumer is waiting for exactly those.
  void WantUpTo(uint64_t position);   // records
  void NoteReadAhead() { read_ahead_.fetch_add(1, std::memory_order_relaxed); }
  void ReadAheadConsumed();

  // Consumer: give an emptied batch back to the producer for reuse.
  void Recycle(std::unique_ptr<RecordBatch> b);
  // Producer: an empty batch, reused when one came back, new otherwise.
  std::unique_ptr<RecordBatch> TakeEmptyBatch();

  // Wakes and releases a producer blocked in Push; later pushes fail. Any thread.
  void Cancel();

  // The receiving end of a remote channel (engine/net/remote_channel.h): its producer is the
  // network. PushReceived enqueues without the capacity check (the sender's credits bound what
  // arrives) and wakes the consumer; false once cancelled. With notify_pops the producer's Parker
  // is woken at every pop, so the network hears that a batch left (popped_batches) and returns a
  // credit. Set before the job starts.
  bool PushReceived(StreamElement&& e);
  void set_notify_pops(bool on) { notify_pops_ = on; }
  // Batches the consumer took off the data lane (any thread, relaxed; written by the consumer).
  uint64_t popped_batches() const { return popped_batches_.load(std::memory_order_relaxed); }

 private:
  bool TryEnqueue(StreamElement& e);  // producer; false when full (e untouched)
  bool EnqueueFeedback(StreamElement& e);  // producer, unbounded channels; false past the backlog limit
  const std::string name_;
  moodycamel::ReaderWriterQueue<StreamElement> queue_;
  moodycamel::ReaderWriterQueue<std::unique_ptr<RecordBatch>> recycled_;
  moodycamel::ReaderWriterQueue<PriorityEvent> priority_;
  Parker* const producer_;
  Parker* const consumer_;
  const size_t capacity_;
  const bool unbounded_;
  const uint64_t backlog_limit_;
  BacklogListener* const listener_;
  SchemaRef schema_;
  std::atomic<int64_t> read_ahead_{0};   // elements in the consumer's overflow
  std::atomic<uint64_t> wanted_{0};      // the consumer waits for records before this position
  uint64_t pushed_records_ = 0;          // producer thread only
  std::atomic<uint64_t> popped_records_{0};  // unbounded channels: written by the consumer only
  std::atomic<bool> producer_waiting_{false};
  // Nanoseconds the producer spent blocked in Push on a full channel (written by the producer
  // only when it was blocked; read by observers: the REST API's backpressure).
  std::atomic<uint64_t> blocked_ns_{0};
  std::atomic<bool> cancelled_{false};
  bool notify_pops_ = false;
  std::atomic<uint64_t> popped_batches_{0};  // written by the consumer only
};

}  // namespace cairn

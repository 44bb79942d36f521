#include "engine/dataflow/rebalance_queue.h"

#include <algorithm>
#include <chrono>

namespace cairn {

RebalanceQueue::RebalanceQueue(std::string name, size_t capacity, uint32_t producers)
    : name_(std::move(name)), capacity_(capacity), producers_(producers), queue_(capacity + 2 * producers) {}

void RebalanceQueue::AddRestored(RecordBatch records) {
  if (records.empty()) return;
  RebalanceItem item;
  item.batch = std::make_unique<RecordBatch>(std::move(records));
  item.restored = true;
  restored_.enqueue(std::move(item));
  ++restored_items_;
  restored_left_.fetch_add(1);
}

void RebalanceQueue::WakeConsumers() {
  for (Parker* p : consumer_parkers_) p->Unpark();
}

bool RebalanceQueue::Push(moodycamel::ProducerToken* token, RebalanceItem&& item, Parker* self, BlockedHandler* handler) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  Parker::Clock::time_point blocked_since{};
  auto room = [&] {
    if (unreleased_.load(std::memory_order_seq_cst) < static_cast<int64_t>(capacity_)) return true;
    const CheckpointId newest = newest_snapshotted_.load(std::memory_order_seq_cst);
    return item.colour < newest && white_complete_.load(std::memory_order_seq_cst) < newest;
  };
  while (!room()) {
    if (blocked_since == Parker::Clock::time_point{}) blocked_since = Parker::Clock::now();
    auto deadline = Parker::Clock::time_point::max();
    if (handler != nullptr && !handler->OnBlocked(&deadline)) return false;
    uint32_t ticket = self->Prepare();
    producers_waiting_.fetch_add(1, std::memory_order_seq_cst);
    if (room() || cancelled_.load(std::memory_order_acquire)) {
      producers_waiting_.fetch_sub(1, std::memory_order_seq_cst);
      self->Cancel();
      if (cancelled_.load(std::memory_order_acquire)) return false;
      break;
    }
    self->Park(ticket, deadline);
    producers_waiting_.fetch_sub(1, std::memory_order_seq_cst);
    if (cancelled_.load(std::memory_order_acquire)) return false;
  }
  if (blocked_since != Parker::Clock::time_point{})
    blocked_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(Parker::Clock::now() - blocked_since).count(),
                          std::memory_order_relaxed);
  // Counted once it is in the queue, so that a consumer that sees the count finds the item.
  queue_.enqueue(*token, std::move(item));  // may allocate a block; bounded by the count above
  unreleased_.fetch_add(1, std::memory_order_seq_cst);
  queued_.fetch_add(1, std::memory_order_seq_cst);
  WakeConsumers();
  return true;
}

std::unique_ptr<RecordBatch> RebalanceQueue::TakeEmptyBatch() {
  std::unique_ptr<RecordBatch> b;
  if (recycled_.try_dequeue(b)) {
    if (schema_ != nullptr) b->Reset(schema_);
    return b;
  }
  return schema_ != nullptr ? std::make_unique<RecordBatch>(schema_) : std::make_unique<RecordBatch>();
}

void RebalanceQueue::Recycle(std::unique_ptr<RecordBatch> b) {
  // Bounded like the queue: beyond it, batches are freed.
  if (recycled_.size_approx() >= capacity_ + producers_) return;
  b->clear();
  recycled_.enqueue(std::move(b));
}

bool RebalanceQueue::TryPop(RebalanceItem* item) {
  if (restored_left_.load(std::memory_order_acquire) > 0 && restored_.try_dequeue(*item)) {
    restored_left_.fetch_sub(1);
    return true;
  }
  if (!queue_.try_dequeue(*item)) return false;
  queued_.fetch_sub(1, std::memory_order_seq_cst);
  return true;
}

void RebalanceQueue::Release() {
  unreleased_.fetch_sub(1, std::memory_order_seq_cst);
  if (producers_waiting_.load(std::memory_order_seq_cst) > 0)
    for (Parker* p : producer_parkers_) p->Unpark();
}

bool RebalanceQueue::CheckComplete() {
  bool advanced = false;
  while (!snapshotted_.empty()) {
    auto it = snapshotted_.begin();
    if (it->second.producers < producers_) break;
    uint64_t white = 0;
    for (const auto& [colour, n] : delivered_) {
      if (colour >= it->first) break;
      white += n;
    }
    if (white != it->second.sent) break;
    view_.white_complete = it->first;
    white_complete_.store(it->first, std::memory_order_seq_cst);
    snapshotted_.erase(it);
    advanced = true;
  }
  return advanced;
}

uint64_t RebalanceQueue::ProducerSnapshotted(uint32_t index, const Barrier& b, uint64_t sent) {
  if (index == 0) sent += restored_items_;
  {
    MutexLock l(&mu_);
    barriers_.emplace(b.id, b);
    if (b.id > newest_snapshotted_.load()) newest_snapshotted_.store(b.id, std::memory_order_seq_cst);
    Snapshotted& s = snapshotted_[b.id];
    s.sent += sent;
    if (++s.producers == producers_) view_.all_snapshotted = std::max(view_.all_snapshotted, b.id);
    CheckComplete();
    // Barriers every consumer is past are not needed any more; keep a few for late readers.
    while (barriers_.size() > 64) barriers_.erase(barriers_.begin());
  }
  WakeConsumers();
  // Blocked producers' items may be white for this checkpoint now: they may pass.
  if (producers_waiting_.load(std::memory_order_seq_cst) > 0)
    for (Parker* p : producer_parkers_) p->Unpark();
  return sent;
}

void RebalanceQueue::ProducerEndedInput(CheckpointId colour) {
  {
    MutexLock l(&mu_);
    view_.end_colour = std::max(view_.end_colour, colour);
    view_.any_ended_input = true;
    if (++ended_input_ == producers_) view_.all_ended_input = true;
  }
  WakeConsumers();
}

void RebalanceQueue::ProducerEndedStream() {
  {
    MutexLock l(&mu_);
    if (++ended_stream_ == producers_) view_.all_ended_stream = true;
  }
  WakeConsumers();
}

void RebalanceQueue::Delivered(CheckpointId colour) {
  bool advanced;
  {
    MutexLock l(&mu_);
    ++delivered_[colour];
    advanced = !snapshotted_.empty() && CheckComplete();
  }
  if (advanced) WakeConsumers();
}

RebalanceQueue::View RebalanceQueue::Look() const {
  MutexLock l(&mu_);
  return view_;
}

bool RebalanceQueue::NextBarrier(CheckpointId after, CheckpointId upto, Barrier* b) const {
  MutexLock l(&mu_);
  auto it = barriers_.upper_bound(after);
  if (it == barriers_.end() || it->first > upto) return false;
  *b = it->second;
  return true;
}

void RebalanceQueue::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  for (Parker* p : producer_parkers_) p->Unpark();
  WakeConsumers();
}

std::string RebalanceQueue::Describe() const {
  MutexLock l(&mu_);
  std::string out = "  " + name_ + ": queued=" + std::to_string(queued_.load()) +
                    " unreleased=" + std::to_string(unreleased_.load()) +
                    " restored=" + std::to_string(restored_left_.load()) +
                    " all_snapshotted=" + std::to_string(view_.all_snapshotted) +
                    " white_complete=" + std::to_string(view_.white_complete);
  for (const auto& [id, s] : snapshotted_)
    out += " [chk " + std::to_string(id) + ": " + std::to_string(s.producers) + "/" + std::to_string(producers_) +
           " producers, sent " + std::to_string(s.sent) + "]";
  if (view_.all_ended_input) out += " ended_input";
  if (view_.all_ended_stream) out += " ended_stream";
  return out + "\n";
}

}  // namespace cairn

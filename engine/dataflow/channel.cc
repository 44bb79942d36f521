#include "engine/dataflow/channel.h"

#include <algorithm>
#include <chrono>

namespace cairn {

Channel::Channel(std::string name, size_t capacity, Parker* producer, Parker* consumer, bool unbounded,
                 uint64_t backlog_limit, BacklogListener* listener)
    : name_(std::move(name)),
      queue_(2 * capacity + 2),  // room for pushes past `capacity` that a read-ahead waits for
      recycled_(capacity + 2),
      priority_(16),
      producer_(producer),
      consumer_(consumer),
      capacity_(capacity),
      unbounded_(unbounded),
      backlog_limit_(backlog_limit),
      listener_(listener) {}

void Channel::PushPriority(const PriorityEvent& e) {
  priority_.enqueue(e);  // may allocate; the lane carries a few events per checkpoint
  consumer_->Unpark();
}

bool Channel::TryPopPriority(PriorityEvent* e) { return priority_.try_dequeue(*e); }

void Channel::WantUpTo(uint64_t position) {
  if (position <= wanted_.load(std::memory_order_relaxed)) return;
  wanted_.store(position, std::memory_order_seq_cst);
  if (producer_waiting_.load(std::memory_order_seq_cst)) producer_->Unpark();
}

void Channel::ReadAheadConsumed() {
  read_ahead_.fetch_sub(1, std::memory_order_seq_cst);
  if (producer_waiting_.load(std::memory_order_seq_cst)) producer_->Unpark();
}

bool Channel::EnqueueFeedback(StreamElement& e) {
  size_t records = e.kind == StreamElement::Kind::kBatch ? e.batch->size() : 0;
  uint64_t queued = pushed_records_ - popped_records_.load(std::memory_order_relaxed) + records;
  if (backlog_limit_ > 0 && records > 0 && queued > backlog_limit_) {
    // The records of a cycle multiply faster than the cycle drains them: fail rather than
    // grow until memory (or, through a sink, the disk) runs out.
    cancelled_.store(true, std::memory_order_release);
    if (listener_ != nullptr)
      listener_->BacklogExceeded(Status::Aborted(
          "feedback edge " + name_ + " holds more than checkpoint.max_feedback_backlog = " +
          std::to_string(backlog_limit_) + " records: the records of its cycle multiply faster than the cycle "
          "drains them (raise checkpoint.max_feedback_backlog if this backlog is expected)"));
    return false;
  }
  queue_.enqueue(std::move(e));  // allocates a new block when full
  pushed_records_ += records;
  return true;
}

bool Channel::TryEnqueue(StreamElement& e) {
  size_t records = e.kind == StreamElement::Kind::kBatch ? e.batch->size() : 0;
  size_t held = queue_.size_approx() + static_cast<size_t>(std::max<int64_t>(read_ahead_.load(), 0));
  bool room = held < capacity_ || pushed_records_ < wanted_.load(std::memory_order_seq_cst);
  if (!room || !queue_.try_enqueue(std::move(e))) return false;
  pushed_records_ += records;
  return true;
}

bool Channel::Push(StreamElement&& e, BlockedHandler* handler) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  if (unbounded_) {
    if (!EnqueueFeedback(e)) return false;
    consumer_->Unpark();
    return true;
  }
  Parker::Clock::time_point blocked_since{};
  while (!TryEnqueue(e)) {
    if (cancelled_.load(std::memory_order_acquire)) return false;
    if (blocked_since == Parker::Clock::time_point{}) blocked_since = Parker::Clock::now();
    auto deadline = Parker::Clock::time_point::max();
    if (handler != nullptr && !handler->OnBlocked(&deadline)) return false;
    uint32_t ticket = producer_->Prepare();
    producer_waiting_.store(true, std::memory_order_seq_cst);
    if (TryEnqueue(e)) {
      producer_waiting_.store(false, std::memory_order_relaxed);
      producer_->Cancel();
      break;
    }
    if (cancelled_.load(std::memory_order_acquire)) {
      producer_->Cancel();
      return false;
    }
    producer_->Park(ticket, deadline);
    producer_waiting_.store(false, std::memory_order_relaxed);
  }
  if (blocked_since != Parker::Clock::time_point{})
    blocked_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(Parker::Clock::now() - blocked_since).count(),
                          std::memory_order_relaxed);
  consumer_->Unpark();
  return true;
}

bool Channel::PushEach(const std::vector<Channel*>& channels,
                       const std::vector<std::vector<std::unique_ptr<RecordBatch>>*>& elements,
                       BlockedHandler* handler) {
  const size_t n = channels.size();
  std::vector<size_t> next(n, 0);
  Parker::Clock::time_point blocked_since{};
  Channel* blocked_on = nullptr;  // the blocked time is counted on one of them
  // Pushes what the channels take now; true when something moved. *left: elements remain.
  auto round = [&](bool* left) {
    bool moved = false;
    *left = false;
    for (size_t i = 0; i < n; ++i) {
      Channel* c = channels[i];
      std::vector<std::unique_ptr<RecordBatch>>& v = *elements[i];
      while (next[i] < v.size()) {
        if (v[next[i]] == nullptr) {
          ++next[i];
          continue;
        }
        StreamElement e = StreamElement::OfBatch(std::move(v[next[i]]));
        if (!c->TryEnqueue(e)) {
          v[next[i]] = std::move(e.batch);
          *left = true;
          if (blocked_on == nullptr) blocked_on = c;
          break;
        }
        ++next[i];
        moved = true;
        c->consumer_->Unpark();
      }
    }
    return moved;
  };
  for (;;) {
    for (Channel* c : channels)
      if (c->cancelled_.load(std::memory_order_acquire)) return false;
    bool left = false;
    if (round(&left)) continue;
    if (!left) break;
    if (blocked_since == Parker::Clock::time_point{}) blocked_since = Parker::Clock::now();
    auto deadline = Parker::Clock::time_point::max();
    if (handler != nullptr && !handler->OnBlocked(&deadline)) return false;
    Parker* producer = channels[0]->producer_;
    uint32_t ticket = producer->Prepare();
    for (size_t i = 0; i < n; ++i)
      if (next[i] < elements[i]->size()) channels[i]->producer_waiting_.store(true, std::memory_order_seq_cst);
    bool cancelled = false;
    for (Channel* c : channels) cancelled |= c->cancelled_.load(std::memory_order_acquire);
    const bool moved = !cancelled && round(&left);
    if (cancelled || moved || !left) {
      producer->Cancel();
    } else {
      producer->Park(ticket, deadline);
    }
    for (Channel* c : channels) c->producer_waiting_.store(false, std::memory_order_relaxed);
    if (cancelled) return false;
  }
  if (blocked_since != Parker::Clock::time_point{} && blocked_on != nullptr)
    blocked_on->blocked_ns_.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Parker::Clock::now() - blocked_since).count(),
        std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) elements[i]->clear();
  return true;
}

bool Channel::TryPop(StreamElement* e) {
  if (!queue_.try_dequeue(*e)) return false;
  if (e->kind == StreamElement::Kind::kBatch) {
    popped_batches_.store(popped_batches_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (unbounded_)
      popped_records_.store(popped_records_.load(std::memory_order_relaxed) + e->batch->size(),
                            std::memory_order_relaxed);
  }
  if (notify_pops_ || producer_waiting_.load(std::memory_order_seq_cst)) producer_->Unpark();
  return true;
}

bool Channel::PushReceived(StreamElement&& e) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  queue_.enqueue(std::move(e));  // allocates a new block when full; credits bound the batches
  consumer_->Unpark();
  return true;
}

void Channel::Recycle(std::unique_ptr<RecordBatch> b) {
  b->clear();
  recycled_.try_enqueue(std::move(b));  // dropped (freed) when the return queue is full
}

std::unique_ptr<RecordBatch> Channel::TakeEmptyBatch() {
  std::unique_ptr<RecordBatch> b;
  if (recycled_.try_dequeue(b)) {
    if (schema_ != nullptr) b->Reset(schema_);
    return b;
  }
  return schema_ != nullptr ? std::make_unique<RecordBatch>(schema_) : std::make_unique<RecordBatch>();
}

void Channel::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  producer_->Unpark();
  consumer_->Unpark();
}

}  // namespace cairn

#include "engine/channel.h"

namespace cairn {

Channel::Channel(std::string name, size_t capacity, Parker* producer, Parker* consumer)
    : name_(std::move(name)), queue_(capacity), recycled_(capacity + 2), producer_(producer), consumer_(consumer) {}

bool Channel::Push(StreamElement&& e) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  while (!queue_.try_enqueue(std::move(e))) {
    if (cancelled_.load(std::memory_order_acquire)) return false;
    uint32_t ticket = producer_->Prepare();
    producer_waiting_.store(true, std::memory_order_seq_cst);
    if (queue_.try_enqueue(std::move(e))) {
      producer_waiting_.store(false, std::memory_order_relaxed);
      producer_->Cancel();
      break;
    }
    if (cancelled_.load(std::memory_order_acquire)) {
      producer_->Cancel();
      return false;
    }
    producer_->Park(ticket);
    producer_waiting_.store(false, std::memory_order_relaxed);
  }
  consumer_->Unpark();
  return true;
}

bool Channel::TryPop(StreamElement* e) {
  if (!queue_.try_dequeue(*e)) return false;
  if (producer_waiting_.load(std::memory_order_seq_cst)) producer_->Unpark();
  return true;
}

void Channel::Recycle(std::unique_ptr<RecordBatch> b) {
  b->clear();
  recycled_.try_enqueue(std::move(b));  // dropped (freed) when the return queue is full
}

std::unique_ptr<RecordBatch> Channel::TakeEmptyBatch() {
  std::unique_ptr<RecordBatch> b;
  if (recycled_.try_dequeue(b)) return b;
  return std::make_unique<RecordBatch>();
}

void Channel::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  producer_->Unpark();
  consumer_->Unpark();
}

}  // namespace cairn

#include "engine/checkpoint/checkpoint_cleaner.h"

#include <utility>

namespace cairn {

CheckpointCleaner::CheckpointCleaner(RetainFn retain, std::function<void(const Status&)> on_error)
    : retain_(std::move(retain)), on_error_(std::move(on_error)) {
  thread_ = std::thread([this] { Loop(); });
}

CheckpointCleaner::~CheckpointCleaner() { Stop(); }

void CheckpointCleaner::Request(CheckpointId completed) {
  MutexLock l(&mu_);
  if (completed <= requested_) return;
  requested_ = completed;
  changed_.SignalAll();
}

void CheckpointCleaner::Drain() {
  MutexLock l(&mu_);
  const CheckpointId want = requested_;
  while (done_ < want) changed_.Wait(&mu_);
}

void CheckpointCleaner::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    changed_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void CheckpointCleaner::Loop() {
  MutexLock l(&mu_);
  for (;;) {
    while (!stop_ && done_ == requested_) changed_.Wait(&mu_);
    if (done_ == requested_) return;  // stopped, and every request had its pass
    const CheckpointId id = requested_;
    mu_.Unlock();
    Status s = retain_(id);
    if (!s.ok() && on_error_) on_error_(s);
    mu_.Lock();
    done_ = id;
    changed_.SignalAll();
  }
}

}  // namespace cairn

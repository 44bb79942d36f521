// A Parker is where one thread sleeps when it has nothing to do, and how others wake it.
//
// Contract: exactly one thread (the owner) calls Prepare()/Park(); any thread may call Unpark().
// The owner reads a ticket with Prepare(), re-checks its work sources, and then calls Park(ticket):
// an Unpark() after Prepare() makes Park() return at once, so no wake-up is lost. Park() may
// also return spuriously or at its deadline. Unpark() costs one atomic add, plus a futex wake
// only while the owner is actually asleep. No spinning: a parked thread uses no CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace cairn {

class Parker {
 public:
  using Clock = std::chrono::steady_clock;

  uint32_t Prepare() {
    sleeping_.store(true, std::memory_order_seq_cst);
    return epoch_.load(std::memory_order_seq_cst);
  }
  // Sleeps until Unpark() or `deadline` (Clock::time_point::max() for none).
  void Park(uint32_t ticket, Clock::time_point deadline = Clock::time_point::max());
  // Marks the owner awake again without sleeping (work was found after Prepare()).
  void Cancel() { sleeping_.store(false, std::memory_order_relaxed); }
  void Unpark() {
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst)) Wake();
  }

 private:
  void Wake();
  alignas(64) std::atomic<uint32_t> epoch_{0};
  std::atomic<bool> sleeping_{false};
};

}  // namespace cairn

#include "engine/base/parker.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace cairn {

void Parker::Park(uint32_t ticket, Clock::time_point deadline) {
  if (epoch_.load(std::memory_order_seq_cst) == ticket) {
    if (deadline == Clock::time_point::max()) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAIT_PRIVATE, ticket, nullptr, nullptr, 0);
    } else {
      auto left = deadline - Clock::now();
      if (left > Clock::duration::zero()) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        struct timespec ts;
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAIT_PRIVATE, ticket, &ts, nullptr, 0);
      }
    }
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

void Parker::Wake() {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace cairn

// RateLimiter paces a source to `rate` records per second (0 = unlimited), measured from the
// first call, so that short bursts even out over time.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace cairn {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateLimiter(int64_t rate) : rate_(rate) {}

  // How many records may go out now (at most `want`); when 0, *resume_at says when to ask again.
  size_t Allowed(size_t want, Clock::time_point* resume_at) {
    if (rate_ <= 0) return want;
    auto now = Clock::now();
    if (!started_) {
      start_ = now;
      started_ = true;
    }
    double elapsed = std::chrono::duration<double>(now - start_).count();
    int64_t budget = static_cast<int64_t>(elapsed * static_cast<double>(rate_)) + 1 - static_cast<int64_t>(emitted_);
    if (budget <= 0) {
      *resume_at = start_ + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(static_cast<double>(emitted_) / static_cast<double>(rate_)));
      return 0;
    }
    return std::min<size_t>(want, static_cast<size_t>(budget));
  }
  void Consumed(size_t n) { emitted_ += n; }

 private:
  const int64_t rate_;
  bool started_ = false;
  Clock::time_point start_;
  uint64_t emitted_ = 0;
};

}  // namespace cairn

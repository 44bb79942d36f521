// TimerService is what a keyed operator with timers (OperatorType::timers) sees of its subtask's
// timers (Flink's TimerService of a KeyedProcessFunction): per key, event-time timers that fire
// when the input watermark reaches them and processing-time timers that fire when the wall
// clock does, each calling Operator::OnTimer(domain, timestamp, key, out).
//
// Contract: task thread only (and Open). A timer is (domain, timestamp, key): registering one
// that exists is a no-op, deleting one that does not exist too. Timers live in the subtask's
// keyed state (so they are checkpointed, restored and split by key group on rescale with the
// rest of it, on either backend, docs/state.md "Timers"); the key must be one of the subtask's.
// Timers fire in (timestamp, key) order, each once; a timer registered for a time that has
// passed fires at the next watermark (event time) or the next turn of the task (processing time).
#pragma once

#include <cstdint>
#include <string_view>

namespace cairn {

enum class TimeDomain : uint8_t { kEventTime = 0, kProcessingTime = 1 };

class TimerService {
 public:
  virtual ~TimerService() = default;
  virtual void RegisterEventTimeTimer(std::string_view key, int64_t timestamp) = 0;
  virtual void DeleteEventTimeTimer(std::string_view key, int64_t timestamp) = 0;
  // `timestamp`: wall clock, Unix ms (CurrentProcessingTime()).
  virtual void RegisterProcessingTimeTimer(std::string_view key, int64_t timestamp) = 0;
  virtual void DeleteProcessingTimeTimer(std::string_view key, int64_t timestamp) = 0;
  // The operator's input watermark (kMinWatermark before the first); after a restore at least
  // the watermark the restored checkpoint had reached.
  virtual int64_t CurrentWatermark() const = 0;
  // The wall clock, Unix ms.
  virtual int64_t CurrentProcessingTime() const = 0;
};

}  // namespace cairn

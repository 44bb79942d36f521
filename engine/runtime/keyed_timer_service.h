// KeyedTimerService is the TimerService of one keyed operator subtask (Flink's
// InternalTimerService): its timers are entries of the subtask's keyed state, so checkpoints,
// restores and rescaling (by key group) carry them like any state, on either backend; an
// in-memory ordered index per time domain, rebuilt from that state when it opens, finds the due
// timers without a scan of the state. Its current watermark is kept in a union list state of
// the operator, so that after a restore (at any parallelism: the least of the old subtasks')
// the operator's watermark does not start behind what the checkpoint had seen.
//
// Stored form (docs/state.md, "Timers"): map state "__timers" of type "cairn.timer,bool"; per
// key, user key = domain byte (0 event time, 1 processing time) + timestamp (8 bytes,
// big-endian, sign bit flipped so that byte order is time order), value = true. Operator list
// state "__watermark" (union, int64): the subtask's current watermark.
//
// Contract: task thread only (and Open). The task advances the watermark and pops due timers;
// the operator registers and deletes timers through the TimerService interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "engine/dataflow/timer_service.h"
#include "state/keyed_state_api.h"
#include "state/operator_list_state.h"

namespace cairn {

class KeyedTimerService final : public TimerService {
 public:
  using WallClock = std::function<int64_t()>;  // Unix ms
  inline static const std::string kStateName = "__timers";
  inline static const std::string kWatermarkState = "__watermark";

  // Declares its states in `keyed` and `operator_state` (restored already, if at all) and
  // rebuilds the index from them. `clock` null: the system's wall clock.
  static Status Open(KeyedStateBackend* keyed, OperatorStateStore* operator_state, WallClock clock,
                     std::unique_ptr<KeyedTimerService>* out);

  // TimerService.
  void RegisterEventTimeTimer(std::string_view key, int64_t timestamp) override;
  void DeleteEventTimeTimer(std::string_view key, int64_t timestamp) override;
  void RegisterProcessingTimeTimer(std::string_view key, int64_t timestamp) override;
  void DeleteProcessingTimeTimer(std::string_view key, int64_t timestamp) override;
  int64_t CurrentWatermark() const override { return watermark_; }
  int64_t CurrentProcessingTime() const override { return clock_(); }

  // ---- For the task.
  // Moves the watermark to `watermark` if that is later; true when it moved.
  bool AdvanceWatermark(int64_t watermark);
  // Removes and returns the first event-time timer at or before the current watermark.
  bool PopEventTimer(int64_t* timestamp, std::string* key);
  // Removes and returns the first processing-time timer at or before `now` (Unix ms).
  bool PopProcessingTimer(int64_t now, int64_t* timestamp, std::string* key);
  // The earliest processing-time timer (Unix ms), INT64_MAX when none.
  int64_t NextProcessingTime() const;
  size_t pending(TimeDomain d) const { return index_[static_cast<int>(d)].size(); }

  // The stored user key of a timer, and back (false when malformed).
  static std::string EncodeUserKey(TimeDomain d, int64_t timestamp);
  static bool DecodeUserKey(std::string_view uk, TimeDomain* d, int64_t* timestamp);

 private:
  KeyedTimerService(KeyedStateBackend* keyed, StateId id, OperatorListState<int64_t>* wm, WallClock clock)
      : keyed_(keyed), id_(id), wm_state_(wm), clock_(std::move(clock)) {}
  void Register(TimeDomain d, std::string_view key, int64_t timestamp);
  void Delete(TimeDomain d, std::string_view key, int64_t timestamp);
  bool Pop(TimeDomain d, int64_t upto, int64_t* timestamp, std::string* key);

  KeyedStateBackend* const keyed_;
  const StateId id_;
  OperatorListState<int64_t>* const wm_state_;
  const WallClock clock_;
  int64_t watermark_;
  std::set<std::pair<int64_t, std::string>> index_[2];  // per domain: (timestamp, key)
  std::string uk_;
};

}  // namespace cairn

#include "engine/runtime/keyed_timer_service.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "engine/dataflow/stream_element.h"

namespace cairn {

namespace {
const StateDescriptor& TimerState() {
  static const StateDescriptor d{StateKind::kMap, "cairn.timer,bool", KeyedTimerService::kStateName};
  return d;
}
constexpr char kTrue[] = "\x01";
}  // namespace

std::string KeyedTimerService::EncodeUserKey(TimeDomain d, int64_t timestamp) {
  std::string uk(9, '\0');
  uk[0] = static_cast<char>(d);
  uint64_t u = static_cast<uint64_t>(timestamp) ^ (uint64_t{1} << 63);
  for (int i = 0; i < 8; ++i) uk[1 + i] = static_cast<char>((u >> (8 * (7 - i))) & 0xff);
  return uk;
}

bool KeyedTimerService::DecodeUserKey(std::string_view uk, TimeDomain* d, int64_t* timestamp) {
  if (uk.size() != 9 || static_cast<unsigned char>(uk[0]) > 1) return false;
  *d = static_cast<TimeDomain>(uk[0]);
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(uk[1 + i]);
  *timestamp = static_cast<int64_t>(u ^ (uint64_t{1} << 63));
  return true;
}

Status KeyedTimerService::Open(KeyedStateBackend* keyed, OperatorStateStore* operator_state, WallClock clock,
                               std::unique_ptr<KeyedTimerService>* out) {
  if (keyed == nullptr || operator_state == nullptr)
    return Status::Internal("a timer service needs keyed state and operator state");
  StateId id;
  CAIRN_RETURN_IF_ERROR(keyed->Declare(TimerState(), &id));
  OperatorListState<int64_t>* wm = nullptr;
  CAIRN_RETURN_IF_ERROR(operator_state->GetUnionListState(kWatermarkState, &wm));
  if (!clock)
    clock = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  std::unique_ptr<KeyedTimerService> t(new KeyedTimerService(keyed, id, wm, std::move(clock)));
  // The least of the restored subtasks' watermarks (each subtask's, at an unchanged parallelism,
  // is among them; none restored: no watermark yet).
  t->watermark_ = kMinWatermark;
  if (!wm->items().empty()) t->watermark_ = *std::min_element(wm->items().begin(), wm->items().end());
  wm->Update({t->watermark_});
  Status status;
  keyed->ForEachEntry(id, [&](std::string_view key, std::string_view uk, std::string_view) {
    TimeDomain d;
    int64_t ts;
    if (!DecodeUserKey(uk, &d, &ts)) {
      if (status.ok()) status = Status::Corruption("a stored timer does not decode (state " + kStateName + ")");
      return;
    }
    t->index_[static_cast<int>(d)].emplace(ts, std::string(key));
  });
  CAIRN_RETURN_IF_ERROR(status);
  *out = std::move(t);
  return Status::OK();
}

void KeyedTimerService::Register(TimeDomain d, std::string_view key, int64_t timestamp) {
  auto [it, inserted] = index_[static_cast<int>(d)].emplace(timestamp, std::string(key));
  if (!inserted) return;
  uk_ = EncodeUserKey(d, timestamp);
  keyed_->Put(id_, key, KeyHash(key), uk_, std::string_view(kTrue, 1));
}

void KeyedTimerService::Delete(TimeDomain d, std::string_view key, int64_t timestamp) {
  auto& index = index_[static_cast<int>(d)];
  auto it = index.find(std::make_pair(timestamp, std::string(key)));
  if (it == index.end()) return;
  index.erase(it);
  uk_ = EncodeUserKey(d, timestamp);
  keyed_->Delete(id_, key, KeyHash(key), uk_);
}

void KeyedTimerService::RegisterEventTimeTimer(std::string_view key, int64_t ts) { Register(TimeDomain::kEventTime, key, ts); }
void KeyedTimerService::DeleteEventTimeTimer(std::string_view key, int64_t ts) { Delete(TimeDomain::kEventTime, key, ts); }
void KeyedTimerService::RegisterProcessingTimeTimer(std::string_view key, int64_t ts) {
  Register(TimeDomain::kProcessingTime, key, ts);
}
void KeyedTimerService::DeleteProcessingTimeTimer(std::string_view key, int64_t ts) {
  Delete(TimeDomain::kProcessingTime, key, ts);
}

bool KeyedTimerService::AdvanceWatermark(int64_t watermark) {
  if (watermark <= watermark_) return false;
  watermark_ = watermark;
  wm_state_->Update({watermark_});
  return true;
}

bool KeyedTimerService::Pop(TimeDomain d, int64_t upto, int64_t* timestamp, std::string* key) {
  auto& index = index_[static_cast<int>(d)];
  if (index.empty() || index.begin()->first > upto) return false;
  auto node = index.extract(index.begin());
  *timestamp = node.value().first;
  *key = std::move(node.value().second);
  uk_ = EncodeUserKey(d, *timestamp);
  keyed_->Delete(id_, *key, KeyHash(*key), uk_);
  return true;
}

bool KeyedTimerService::PopEventTimer(int64_t* timestamp, std::string* key) {
  return Pop(TimeDomain::kEventTime, watermark_, timestamp, key);
}

bool KeyedTimerService::PopProcessingTimer(int64_t now, int64_t* timestamp, std::string* key) {
  return Pop(TimeDomain::kProcessingTime, now, timestamp, key);
}

int64_t KeyedTimerService::NextProcessingTime() const {
  const auto& index = index_[static_cast<int>(TimeDomain::kProcessingTime)];
  return index.empty() ? std::numeric_limits<int64_t>::max() : index.begin()->first;
}

}  // namespace cairn

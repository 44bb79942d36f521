// window: event-time windows per key (key_by, optional) over the record time `time`: tumble
// (size), hop (size, slide) and session (gap) windows, each aggregated incrementally with the
// functions of `aggregates` (as `aggregate`), emitted once per window and key when the
// watermark passes the window's end: the key fields, the aggregates, window_start and
// window_end (timestamps; a window is [window_start, window_end)).
//
// Semantics (Flink's event-time windows with an EventTimeTrigger):
// - A record with time t belongs to tumble window [floor(t/size)*size, +size), to every hop
//   window [k*slide, k*slide+size) that contains t, and to the session [t, t+gap), merged with
//   every session of its key that it touches (their accumulators merged).
// - A window fires when the watermark reaches window_end - 1 (an event-time timer).
// - A window is late once the watermark reached window_end - 1 + allowed_lateness. A record
//   whose windows are all late is dropped and counted (records_late); one that falls into a
//   window that fired but is not late yet updates it and re-emits it at once (another record
//   for the same window, with the updated aggregates). The window's state is removed at
//   window_end - 1 + allowed_lateness.
// - A record whose time is null is dropped and counted as late.
//
// State (docs/state.md): map state "windows" per key: user key = the window (start, end, 8
// bytes each, big-endian with the sign bit flipped, so windows are in start order), value =
// the window's accumulators (operators/aggregate_functions.h); the timers of the
// KeyedTimerService; operator list state "records_late" (this subtask's count).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/dataflow/record_codec.h"
#include "jobs/registry.h"
#include "operators/aggregate_functions.h"
#include "operators/window_bounds.h"
#include "state/keyed_state_api.h"
#include "state/operator_list_state.h"

namespace cairn {
namespace {

enum class Kind { kTumble, kHop, kSession };


const char* const kReserved[] = {"window_start", "window_end"};

// The validated window parameters.
struct WindowParams {
  Kind kind = Kind::kTumble;
  int64_t size = 0, slide = 0, gap = 0, lateness = 0;
};

Status ParseParams(const OperatorConfig& c, WindowParams* p) {
  const std::string& kind = c.GetString("kind");
  auto err = [&](const std::string& param, const std::string& what) {
    return Status::InvalidArgument(c.Where(param) + ": operator '" + c.id + "': " + what);
  };
  auto given = [&](const std::string& param) { return c.places.count(param) > 0; };
  if (kind == "tumble") p->kind = Kind::kTumble;
  else if (kind == "hop") p->kind = Kind::kHop;
  else if (kind == "session") p->kind = Kind::kSession;
  else return err("kind", "window kind must be tumble, hop or session, got '" + kind + "'");
  p->size = c.GetDuration("size").count();
  p->slide = c.GetDuration("slide").count();
  p->gap = c.GetDuration("gap").count();
  p->lateness = c.GetDuration("allowed_lateness").count();
  if (p->kind == Kind::kSession) {
    if (p->gap <= 0) return err("gap", "a session window needs gap, a duration > 0");
    if (given("size")) return err("size", "a session window has no size (its gap ends it)");
    if (given("slide")) return err("slide", "a session window has no slide");
    return Status::OK();
  }
  if (given("gap")) return err("gap", "gap is for session windows only (kind " + kind + ")");
  if (p->size <= 0) return err("size", "a " + kind + " window needs size, a duration > 0");
  if (p->kind == Kind::kTumble) {
    if (given("slide")) return err("slide", "a tumble window has no slide (use kind: hop)");
    return Status::OK();
  }
  if (p->slide <= 0) return err("slide", "a hop window needs slide, a duration > 0");
  if (p->slide > p->size)
    return err("slide", "slide " + c.GetString("slide") + " is greater than size " + c.GetString("size") +
                            " (records between the windows would belong to none)");
  return Status::OK();
}

Status TimeField(const OperatorConfig& c, const Schema& in, int* field) {
  const std::string& name = c.GetString("time");
  *field = in.IndexOf(name);
  if (*field < 0)
    return Status::InvalidArgument(c.Where("time") + ": operator '" + c.id + "': no time field '" + name +
                                   "' in the input " + in.ToString());
  FieldType t = in.field(static_cast<size_t>(*field)).type;
  if (t != FieldType::kTimestamp && t != FieldType::kInt64)
    return Status::InvalidArgument(c.Where("time") + ": operator '" + c.id + "': time field '" + name + "' is " +
                                   FieldTypeName(t) + ", but it must be a timestamp or an int64 (ms)");
  return Status::OK();
}

class WindowOp final : public Operator, public LateRecords {
 public:
  explicit WindowOp(const OperatorConfig& c) : config_(c) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr || ctx.timers == nullptr)
      return Status::Internal("window " + ctx.operator_id + " has no keyed state or timers");
    CAIRN_RETURN_IF_ERROR(ParseParams(config_, &params_));
    keyed_ = ctx.keyed;
    timers_ = ctx.timers;
    CAIRN_RETURN_IF_ERROR(keyed_->Declare(
        StateDescriptor{StateKind::kMap, "cairn.window,cairn.window.accumulators", "windows"}, &windows_));
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetListState("records_late", &late_state_));
    for (int64_t n : late_state_->items()) late_ += static_cast<uint64_t>(n);
    late_state_->Update({static_cast<int64_t>(late_)});
    const SchemaRef& in = ctx.input_schemas[0];
    CAIRN_RETURN_IF_ERROR(KeySelector::Make(*in, config_.key_by, &key_));
    CAIRN_RETURN_IF_ERROR(TimeField(config_, *in, &time_));
    CAIRN_RETURN_IF_ERROR(ParseAggregates(config_, *in, {kReserved[0], kReserved[1]}, &aggs_));
    acc_ = AggregateAccumulators(&aggs_);
    other_ = AggregateAccumulators(&aggs_);
    for (size_t k = 0; k < key_.fields().size(); ++k) {
      key_types_.push_back(in->field(static_cast<size_t>(key_.fields()[k])).type);
      key_at_.push_back(static_cast<int>(k));
    }
    return Status::OK();
  }

  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    const int64_t wm = timers_->CurrentWatermark();
    const size_t tf = static_cast<size_t>(time_);
    for (size_t i = 0; i < in.size(); ++i) {
      if (in.IsNull(i, tf)) {
        CountLate();
        continue;
      }
      const int64_t t = in.GetInt64(i, tf);
      std::string_view key = key_.Key(in, i, &scratch_);
      bool taken = false;
      if (params_.kind == Kind::kSession) {
        CAIRN_RETURN_IF_ERROR(AddToSession(key, in, i, t, wm, out, &taken));
      } else {
        // Windows that contain t: tumble is hop with slide = size.
        const int64_t slide = params_.kind == Kind::kTumble ? params_.size : params_.slide;
        for (int64_t start = FloorDiv(t, slide) * slide; start > t - params_.size; start -= slide) {
          Window w{start, start + params_.size};
          if (Late(w, wm)) continue;
          CAIRN_RETURN_IF_ERROR(AddToWindow(key, w, in, i, wm, out));
          taken = true;
        }
      }
      if (!taken) CountLate();
    }
    return Status::OK();
  }

  Status OnTimer(TimeDomain domain, int64_t ts, std::string_view key, RecordBatch* out) override {
    if (domain != TimeDomain::kEventTime) return Status::OK();
    // The key's windows whose end - 1 (fire) or end - 1 + lateness (clean-up) is `ts`.
    std::vector<std::pair<Window, std::string>> due;
    Status status;
    keyed_->ForEachUserKey(windows_, key, KeyHash(key), [&](std::string_view uk, std::string_view v) {
      Window w;
      if (!DecodeWindow(uk, &w)) {
        status = Status::Corruption("window " + config_.id + ": a stored window does not decode");
        return;
      }
      if (w.end - 1 == ts || w.end - 1 + params_.lateness == ts) due.emplace_back(w, std::string(v));
    });
    CAIRN_RETURN_IF_ERROR(status);
    for (auto& [w, bytes] : due) {
      if (w.end - 1 == ts) {
        if (!acc_.Decode(bytes)) return Status::Corruption("window " + config_.id + ": an accumulator does not decode");
        CAIRN_RETURN_IF_ERROR(EmitWindow(key, w, out));
      }
      if (w.end - 1 + params_.lateness == ts) keyed_->Delete(windows_, key, KeyHash(key), EncodeWindow(w));
    }
    return Status::OK();
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot*) override {
    late_state_->Update({static_cast<int64_t>(late_)});
    return Status::OK();
  }

  uint64_t records_late() const override { return late_; }

 private:
  bool Late(const Window& w, int64_t wm) const { return w.end - 1 + params_.lateness <= wm; }

  void CountLate() { ++late_; }

  void RegisterTimers(std::string_view key, const Window& w) {
    timers_->RegisterEventTimeTimer(key, w.end - 1);
    if (params_.lateness > 0) timers_->RegisterEventTimeTimer(key, w.end - 1 + params_.lateness);
  }
  void DeleteTimers(std::string_view key, const Window& w) {
    timers_->DeleteEventTimeTimer(key, w.end - 1);
    if (params_.lateness > 0) timers_->DeleteEventTimeTimer(key, w.end - 1 + params_.lateness);
  }

  Status AddToWindow(std::string_view key, const Window& w, const RecordBatch& in, size_t i, int64_t wm,
                     RecordBatch* out) {
    const uint64_t hash = KeyHash(key);
    uk_ = EncodeWindow(w);
    if (keyed_->Get(windows_, key, hash, uk_, &bytes_)) {
      if (!acc_.Decode(bytes_)) return Status::Corruption("window " + config_.id + ": an accumulator does not decode");
    } else {
      acc_.Reset();
      RegisterTimers(key, w);
    }
    acc_.Add(in, i);
    acc_.Encode(&bytes_);
    keyed_->Put(windows_, key, hash, uk_, bytes_);
    // Fired already, within the allowed lateness: the updated result at once.
    if (w.end - 1 <= wm) return EmitWindow(key, w, out);
    return Status::OK();
  }

  Status AddToSession(std::string_view key, const RecordBatch& in, size_t i, int64_t t, int64_t wm,
                      RecordBatch* out, bool* taken) {
    const uint64_t hash = KeyHash(key);
    Window merged{t, t + params_.gap};
    // The sessions of the key that the record's session touches (Flink's TimeWindow.intersects).
    std::vector<std::pair<Window, std::string>> touched;
    Status status;
    keyed_->ForEachUserKey(windows_, key, hash, [&](std::string_view uk, std::string_view v) {
      Window w;
      if (!DecodeWindow(uk, &w)) {
        status = Status::Corruption("window " + config_.id + ": a stored window does not decode");
        return;
      }
      if (w.start <= merged.end && merged.start <= w.end) touched.emplace_back(w, std::string(v));
    });
    CAIRN_RETURN_IF_ERROR(status);
    for (const auto& [w, v] : touched) {
      merged.start = std::min(merged.start, w.start);
      merged.end = std::max(merged.end, w.end);
    }
    if (Late(merged, wm)) return Status::OK();
    *taken = true;
    acc_.Reset();
    for (const auto& [w, v] : touched) {
      if (!other_.Decode(v)) return Status::Corruption("window " + config_.id + ": an accumulator does not decode");
      acc_.Merge(other_);
      if (w.start != merged.start || w.end != merged.end) {
        keyed_->Delete(windows_, key, hash, EncodeWindow(w));
        DeleteTimers(key, w);
      }
    }
    acc_.Add(in, i);
    acc_.Encode(&bytes_);
    keyed_->Put(windows_, key, hash, EncodeWindow(merged), bytes_);
    RegisterTimers(key, merged);  // a no-op when the session did not change
    if (merged.end - 1 <= wm) return EmitWindow(key, merged, out);
    return Status::OK();
  }

  // One record: the key fields, the aggregates in acc_, window_start, window_end.
  Status EmitWindow(std::string_view key, const Window& w, RecordBatch* out) {
    size_t r = out->AddRow();
    if (!DecodeKeyInto(key, key_types_, key_at_, out, r))
      return Status::Corruption("window " + config_.id + ": a key does not decode");
    const size_t base = key_types_.size();
    acc_.Write(out, r, base);
    out->SetInt64(r, base + aggs_.size(), w.start);
    out->SetInt64(r, base + aggs_.size() + 1, w.end);
    return Status::OK();
  }

  const OperatorConfig config_;
  WindowParams params_;
  KeyedStateBackend* keyed_ = nullptr;
  TimerService* timers_ = nullptr;
  StateId windows_ = 0;
  OperatorListState<int64_t>* late_state_ = nullptr;
  uint64_t late_ = 0;
  KeySelector key_;
  int time_ = -1;
  std::vector<AggregateSpec> aggs_;
  AggregateAccumulators acc_, other_;
  std::vector<FieldType> key_types_;
  std::vector<int> key_at_;
  std::string scratch_, uk_, bytes_;
};

Status WindowSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  WindowParams p;
  CAIRN_RETURN_IF_ERROR(ParseParams(c, &p));
  SchemaRef in;
  CAIRN_RETURN_IF_ERROR(CommonInputSchema(c, inputs, "windows the same fields of all its inputs", &in));
  int time = -1;
  CAIRN_RETURN_IF_ERROR(TimeField(c, *in, &time));
  std::vector<AggregateSpec> aggs;
  CAIRN_RETURN_IF_ERROR(ParseAggregates(c, *in, {kReserved[0], kReserved[1]}, &aggs));
  std::vector<Field> fields;
  for (const std::string& k : c.key_by) {
    if (k == kReserved[0] || k == kReserved[1])
      return Status::InvalidArgument(c.Where("key_by") + ": operator '" + c.id + "': key field '" + k +
                                     "' has the name of an output field of its own");
    fields.push_back(in->field(static_cast<size_t>(in->IndexOf(k))));
  }
  for (const AggregateSpec& a : aggs) fields.push_back({a.name, a.out});
  fields.push_back({kReserved[0], FieldType::kTimestamp});
  fields.push_back({kReserved[1], FieldType::kTimestamp});
  return Schema::Make(std::move(fields), out);
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "window",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .key_by_optional = true,
    .timers = true,
    .output_schema = WindowSchema,
    .params = {
        {.name = "time", .type = ParamType::kString, .required = true,
         .doc = "the event-time field: a timestamp, or an int64 of milliseconds"},
        {.name = "kind", .type = ParamType::kString, .required = true, .doc = "tumble, hop or session"},
        {.name = "size", .type = ParamType::kDuration, .default_value = "0",
         .doc = "tumble and hop: the length of a window (required for them)"},
        {.name = "slide", .type = ParamType::kDuration, .default_value = "0",
         .doc = "hop: how far apart windows start, at most size (required for hop)"},
        {.name = "gap", .type = ParamType::kDuration, .default_value = "0",
         .doc = "session: a key's session ends after this long without a record (required for session)"},
        {.name = "aggregates", .type = ParamType::kMap, .required = true,
         .doc = "output field -> count(*), count(x), sum(x), min(x), max(x) or avg(x) of an input field x, as in aggregate"},
        {.name = "allowed_lateness", .type = ParamType::kDuration, .default_value = "0",
         .doc = "how long after its end a window still takes late records (each re-emits it updated)"},
    },
    .doc = "Event-time windows per key (key_by optional: without it, one window sequence for all records, "
           "in one subtask): tumble (size), hop (size, slide) or session (gap) windows over the time field "
           "`time`, aggregated incrementally as `aggregates`. Emits one record per window and key when the "
           "watermark passes the window's end: the key fields, the aggregates, then window_start and "
           "window_end (timestamps; the window is [window_start, window_end)). Records whose windows are all "
           "past end + allowed_lateness (or whose time is null) are dropped and counted as records_late; a "
           "record within the allowed lateness of a window that fired updates it and emits it again. "
           "Needs watermarks (a source's `watermark:`); without them, windows fire when the input ends.",
    .create = MakeOperator<WindowOp>,
});

}  // namespace cairn

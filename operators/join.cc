// join: an inner equi-join of two inputs, regular (Flink SQL's `a JOIN b ON ...`) or windowed
// (Flink's window join: both inputs cut into the same tumbling windows of event time).
// Each input is hash-partitioned by its own key fields (`on: {LEFT: [fields], RIGHT: [fields]}`,
// the i-th fields of both of one type), so equal keys meet in one subtask. The output is
// `select` (expressions over the pair's fields, named `<input id>.<field>`) evaluated a batch of
// pairs at a time.
//
// Regular: every record is kept in keyed list state of its side ("left" / "right") and joined
// with every record of the other side's list under its key that is there already: each
// matching pair is emitted once, by the later of the two, whichever side it came on.
// state_ttl (Flink's idle state retention, by processing time): a kept record older than it is
// no longer joined and is dropped from state the next time its key is read.
// Stored element of a side's list: the time it was stored (fixed64, ms since the epoch), then the
// record in the channel-state row encoding (engine/dataflow/record_codec.h).
//
// Windowed (`window: {kind: tumble, size: D}`, `time: {LEFT: F, RIGHT: G}`): a record with time
// t (its input's `time` field) belongs to the window [floor(t/size)*size, +size). Each record is kept in keyed map
// state of its side ("left_windows" / "right_windows"; user key = the window's start and end,
// 8 bytes each as in `window`, then an 8-byte big-endian sequence number unique in the subtask;
// value = the row encoding). When the watermark reaches window_end - 1 (an event-time timer per
// key and window) every pair of the window's left and right records under the key is emitted,
// left records in arrival order, each with the right ones in arrival order, and the window's
// records are removed. A record whose window fired already (window_end - 1 <= the watermark),
// or whose time is null, is dropped and counted as late (records_late). `select` may also read
// window_start and window_end. The sequence counter is the union list state "next_seq" (a
// restored subtask starts past every old subtask's), records_late the split list state
// "records_late", as in `window`.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/dataflow/record_codec.h"
#include "engine/expr/expr.h"
#include "jobs/job_loader.h"
#include "jobs/registry.h"
#include "operators/select_exprs.h"
#include "operators/window_bounds.h"
#include "state/keyed_state_api.h"
#include "state/operator_list_state.h"

namespace cairn {
namespace {

constexpr const char* kRowsType = "cairn.join.rows";

constexpr const char* kWindowStart = "window_start";
constexpr const char* kWindowEnd = "window_end";

// The validated `window:` and `time:` of a windowed join (size 0: not windowed).
struct JoinWindow {
  int64_t size = 0;
  std::string time[2];  // each input's event-time field
};

Status ParseJoinWindow(const OperatorConfig& c, JoinWindow* w) {
  *w = JoinWindow{};
  const std::string what = "operator '" + c.id + "' (type join)";
  const std::vector<ParamEntry>& times = c.GetEntries("time");
  const std::vector<ParamEntry>& entries = c.GetEntries("window");
  if (entries.empty()) {
    if (!times.empty())
      return Status::InvalidArgument(c.Where("time") + ": " + what +
                                     ": time is for a window join; it needs window: {kind: tumble, size: D}");
    return Status::OK();
  }
  std::string kind;
  for (const ParamEntry& e : entries) {
    if (e.key == "kind") {
      kind = e.value;
      if (kind != "tumble")
        return Status::InvalidArgument(e.location + ": " + what + ": window.kind must be tumble (the window join's kind), got '" +
                                       kind + "'");
    } else if (e.key == "size") {
      Millis d{};
      if (!ParseDuration(e.value, &d) || d.count() <= 0)
        return Status::InvalidArgument(e.location + ": " + what + ": window.size must be a duration > 0 (e.g. 10s), got '" +
                                       e.value + "'");
      w->size = d.count();
    } else {
      return Status::InvalidArgument(e.location + ": " + what + ": window has no key '" + e.key +
                                     "' (it has kind and size)");
    }
  }
  if (kind.empty()) return Status::InvalidArgument(c.Where("window") + ": " + what + ": window needs kind: tumble");
  if (w->size <= 0)
    return Status::InvalidArgument(c.Where("window") + ": " + what + ": window needs size, a duration > 0");
  if (c.GetDuration("state_ttl").count() > 0)
    return Status::InvalidArgument(c.Where("state_ttl") + ": " + what +
                                   ": state_ttl is for a regular join; a window join drops a window's records once "
                                   "it fired");
  for (const ParamEntry& e : times) {
    size_t side = c.inputs.size() == 2 && e.key == c.inputs[0] ? 0 : c.inputs.size() == 2 && e.key == c.inputs[1] ? 1 : 2;
    if (side == 2)
      return Status::InvalidArgument(e.location + ": " + what + ": time names '" + e.key +
                                     "', which is not one of its inputs");
    if (!w->time[side].empty())
      return Status::InvalidArgument(e.location + ": " + what + ": time names one field per input, but '" + e.key +
                                     "' has more");
    w->time[side] = e.value;
  }
  for (size_t side = 0; side < 2; ++side)
    if (w->time[side].empty())
      return Status::InvalidArgument(c.Where(times.empty() ? "window" : "time") + ": " + what +
                                     ": a window join needs time: {" + c.inputs[0] + ": FIELD, " + c.inputs[1] +
                                     ": FIELD}, each input's event-time field (a timestamp or int64 ms); it names "
                                     "none for '" + c.inputs[side] + "'");
  return Status::OK();
}

// The event-time field of a windowed join in one input's schema.
Status JoinTimeField(const OperatorConfig& c, const JoinWindow& w, size_t side, const Schema& in, int* field) {
  const std::string& name = w.time[side];
  const std::string at = c.Where("time") + ": operator '" + c.id + "' (type join): time of '" + c.inputs[side] + "': ";
  *field = in.IndexOf(name);
  if (*field < 0) return Status::InvalidArgument(at + "no field '" + name + "' in " + in.ToString());
  FieldType t = in.field(static_cast<size_t>(*field)).type;
  if (t != FieldType::kTimestamp && t != FieldType::kInt64)
    return Status::InvalidArgument(at + "field '" + name + "' is " + FieldTypeName(t) +
                                   ", but it must be a timestamp or an int64 (ms)");
  return Status::OK();
}

// The fields of both inputs, each named `<input id>.<field>`, then (windowed) window_start and
// window_end: what `select` reads.
Status PairSchema(const OperatorConfig& c, const SchemaRef& left, const SchemaRef& right, bool windowed,
                  SchemaRef* out) {
  std::vector<Field> fields;
  for (size_t side = 0; side < 2; ++side)
    for (const Field& f : (side == 0 ? left : right)->fields()) fields.push_back({c.inputs[side] + "." + f.name, f.type});
  if (windowed) {
    fields.push_back({kWindowStart, FieldType::kTimestamp});
    fields.push_back({kWindowEnd, FieldType::kTimestamp});
  }
  return Schema::Make(std::move(fields), out);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Appends the pair (left row l of `lb`, right row r of `rb`) to *pairs, then (windowed) the
// window bounds.
void AddPair(const RecordBatch& lb, size_t l, const RecordBatch& rb, size_t r, RecordBatch* pairs) {
  const size_t row = pairs->AddRow(), nl = lb.num_fields(), nr = rb.num_fields();
  for (size_t f = 0; f < nl; ++f) pairs->CopyFieldFrom(lb, l, f, row, f);
  for (size_t f = 0; f < nr; ++f) pairs->CopyFieldFrom(rb, r, f, row, nl + f);
}

// `select` over the batch of pairs, appended to *out.
void EmitSelected(ExprProgram* program, const std::vector<Field>& fields, RecordBatch* pairs, RecordBatch* out) {
  if (pairs->empty()) return;
  program->Evaluate(*pairs);
  const size_t first = out->size(), n = pairs->size();
  for (size_t k = 0; k < n; ++k) out->AddRow();
  for (size_t f = 0; f < fields.size(); ++f) WriteColumn(program->result(f), fields[f].type, n, out, first, f);
}

class Join final : public Operator {
 public:
  explicit Join(const OperatorConfig& c) : config_(c), ttl_ms_(c.GetDuration("state_ttl").count()) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr) return Status::Internal("join " + ctx.operator_id + " has no keyed state");
    if (ctx.input_schemas.size() != 2 || ctx.input_schemas[0] == nullptr || ctx.input_schemas[1] == nullptr)
      return Status::Internal("join " + ctx.operator_id + " needs the schemas of its two inputs");
    backend_ = ctx.keyed;
    for (size_t side = 0; side < 2; ++side) {
      Side& s = sides_[side];
      s.schema = ctx.input_schemas[side];
      CAIRN_RETURN_IF_ERROR(backend_->Declare(StateDescriptor{StateKind::kList, kRowsType, side == 0 ? "left" : "right"},
                                              &s.state));
      CAIRN_RETURN_IF_ERROR(KeySelector::Make(*s.schema, config_.input_key_by[side], &s.key));
      s.kept = RecordBatch(s.schema);
    }
    SchemaRef pair;
    CAIRN_RETURN_IF_ERROR(PairSchema(config_, sides_[0].schema, sides_[1].schema, false, &pair));
    pairs_ = RecordBatch(pair);
    return CompileSelect(config_, pair, &program_, &fields_);
  }

  Status Process(int input, const RecordBatch& in, RecordBatch* out) override {
    const size_t side = input == 0 ? 0 : 1;
    Side& mine = sides_[side];
    Side& other = sides_[1 - side];
    const int64_t now = NowMs();  // once per batch; stored with each record, so a later state_ttl applies to it too
    pairs_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view key = mine.key.Key(in, i, &key_scratch_);
      const uint64_t hash = KeyHash(key);
      // The other side's records under this key: each pairs with this one.
      CAIRN_RETURN_IF_ERROR(ReadKept(&other, key, hash, now));
      for (size_t j = 0; j < other.kept.size(); ++j)
        side == 0 ? AddPair(in, i, other.kept, j, &pairs_) : AddPair(other.kept, j, in, i, &pairs_);
      // Then this record is kept for the other side's later records.
      element_.clear();
      PutFixed64(&element_, static_cast<uint64_t>(now));
      EncodeRow(in, i, &element_);
      backend_->AppendToList(mine.state, key, hash, element_);
    }
    EmitSelected(program_.get(), fields_, &pairs_, out);
    return Status::OK();
  }

 private:
  struct Side {
    SchemaRef schema;
    KeySelector key;
    StateId state = 0;
    RecordBatch kept;  // the records of one key, as read from state
  };

  // side->kept = the live records of `key`; expired ones (state_ttl) are dropped from state.
  Status ReadKept(Side* side, std::string_view key, uint64_t hash, int64_t now) {
    side->kept.clear();
    if (!backend_->Get(side->state, key, hash, {}, &list_)) return Status::OK();
    elements_.clear();
    if (!SplitList(list_, &elements_))
      return Status::Corruption("join " + config_.id + ": kept records of a key do not decode");
    bool expired = false;
    for (std::string_view e : elements_) {
      Decoder d(e);
      uint64_t stored = 0;
      if (!d.GetFixed64(&stored)) return Status::Corruption("join " + config_.id + ": a kept record does not decode");
      if (ttl_ms_ > 0 && now - static_cast<int64_t>(stored) > ttl_ms_) {
        expired = true;
        continue;
      }
      if (!DecodeRow(&d, &side->kept) || !d.done())
        return Status::Corruption("join " + config_.id + ": a kept record does not decode");
    }
    if (!expired) return Status::OK();
    std::string live;
    for (std::string_view e : elements_) {
      uint64_t stored = 0;
      Decoder d(e);
      if (d.GetFixed64(&stored) && now - static_cast<int64_t>(stored) <= ttl_ms_) AppendListElement(&live, e);
    }
    if (live.empty()) {
      backend_->Delete(side->state, key, hash, {});
    } else {
      backend_->Put(side->state, key, hash, {}, live);
    }
    return Status::OK();
  }

  const OperatorConfig config_;
  const int64_t ttl_ms_;  // 0: records are kept for ever
  KeyedStateBackend* backend_ = nullptr;
  Side sides_[2];
  RecordBatch pairs_;
  std::unique_ptr<ExprProgram> program_;
  std::vector<Field> fields_;
  std::string key_scratch_, element_, list_;
  std::vector<std::string_view> elements_;
};

// The windowed join (see the top of this file).
class WindowJoin final : public Operator, public LateRecords {
 public:
  WindowJoin(const OperatorConfig& c, JoinWindow w) : config_(c), window_(std::move(w)) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr || ctx.timers == nullptr)
      return Status::Internal("join " + ctx.operator_id + " has no keyed state or timers");
    if (ctx.input_schemas.size() != 2 || ctx.input_schemas[0] == nullptr || ctx.input_schemas[1] == nullptr)
      return Status::Internal("join " + ctx.operator_id + " needs the schemas of its two inputs");
    keyed_ = ctx.keyed;
    timers_ = ctx.timers;
    for (size_t side = 0; side < 2; ++side) {
      Side& s = sides_[side];
      s.schema = ctx.input_schemas[side];
      CAIRN_RETURN_IF_ERROR(keyed_->Declare(StateDescriptor{StateKind::kMap, std::string(kWindowRowsType),
                                                            side == 0 ? "left_windows" : "right_windows"},
                                            &s.state));
      CAIRN_RETURN_IF_ERROR(KeySelector::Make(*s.schema, config_.input_key_by[side], &s.key));
      CAIRN_RETURN_IF_ERROR(JoinTimeField(config_, window_, side, *s.schema, &s.time));
      s.rows = RecordBatch(s.schema);
    }
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetListState("records_late", &late_state_));
    for (int64_t n : late_state_->items()) late_ += static_cast<uint64_t>(n);
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState("next_seq", &seq_state_));
    for (int64_t n : seq_state_->items()) next_seq_ = std::max(next_seq_, static_cast<uint64_t>(n));
    Remember();
    SchemaRef pair;
    CAIRN_RETURN_IF_ERROR(PairSchema(config_, sides_[0].schema, sides_[1].schema, true, &pair));
    pairs_ = RecordBatch(pair);
    return CompileSelect(config_, pair, &program_, &fields_);
  }

  Status Process(int input, const RecordBatch& in, RecordBatch*) override {
    Side& s = sides_[input == 0 ? 0 : 1];
    const int64_t wm = timers_->CurrentWatermark();
    const size_t tf = static_cast<size_t>(s.time);
    for (size_t i = 0; i < in.size(); ++i) {
      if (in.IsNull(i, tf)) {
        ++late_;
        continue;
      }
      const int64_t t = in.GetInt64(i, tf);
      const int64_t start = FloorDiv(t, window_.size) * window_.size, end = start + window_.size;
      if (end - 1 <= wm) {  // fired already
        ++late_;
        continue;
      }
      std::string_view key = s.key.Key(in, i, &scratch_);
      const uint64_t hash = KeyHash(key);
      UserKey(start, end, next_seq_++, &uk_);
      row_.clear();
      EncodeRow(in, i, &row_);
      keyed_->Put(s.state, key, hash, uk_, row_);
      timers_->RegisterEventTimeTimer(key, end - 1);
    }
    return Status::OK();
  }

  Status OnTimer(TimeDomain domain, int64_t ts, std::string_view key, RecordBatch* out) override {
    if (domain != TimeDomain::kEventTime) return Status::OK();
    const int64_t end = ts + 1, start = end - window_.size;
    const uint64_t hash = KeyHash(key);
    UserKey(start, end, 0, &uk_);
    const std::string_view window = std::string_view(uk_).substr(0, 16);
    for (Side& s : sides_) {
      s.rows.clear();
      s.done.clear();
      Status status;
      keyed_->ForEachUserKey(s.state, key, hash, [&](std::string_view uk, std::string_view v) {
        if (!status.ok() || uk.size() != 24 || uk.substr(0, 16) != window) return;
        Decoder d(v);
        if (!DecodeRow(&d, &s.rows) || !d.done())
          status = Status::Corruption("join " + config_.id + ": a kept record does not decode");
        s.done.emplace_back(uk);
      });
      CAIRN_RETURN_IF_ERROR(status);
      for (const std::string& uk : s.done) keyed_->Delete(s.state, key, hash, uk);
    }
    pairs_.clear();
    const RecordBatch& l = sides_[0].rows;
    const RecordBatch& r = sides_[1].rows;
    const size_t nf = pairs_.num_fields();
    for (size_t i = 0; i < l.size(); ++i)
      for (size_t j = 0; j < r.size(); ++j) {
        AddPair(l, i, r, j, &pairs_);
        const size_t row = pairs_.size() - 1;
        pairs_.SetInt64(row, nf - 2, start);
        pairs_.SetInt64(row, nf - 1, end);
      }
    EmitSelected(program_.get(), fields_, &pairs_, out);
    return Status::OK();
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot*) override {
    Remember();
    return Status::OK();
  }

  uint64_t records_late() const override { return late_; }

 private:
  static constexpr std::string_view kWindowRowsType = "cairn.join.window_row,cairn.join.row";

  struct Side {
    SchemaRef schema;
    KeySelector key;
    int time = -1;
    StateId state = 0;
    RecordBatch rows;               // a window's records of one key, in arrival order
    std::vector<std::string> done;  // their user keys
  };

  void Remember() {
    late_state_->Update({static_cast<int64_t>(late_)});
    seq_state_->Update({static_cast<int64_t>(next_seq_)});
  }

  // The window as `window` stores it, then seq big-endian.
  static void UserKey(int64_t start, int64_t end, uint64_t seq, std::string* out) {
    *out = EncodeWindow(Window{start, end});
    for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((seq >> (8 * (7 - i))) & 0xff));
  }

  const OperatorConfig config_;
  const JoinWindow window_;
  KeyedStateBackend* keyed_ = nullptr;
  TimerService* timers_ = nullptr;
  Side sides_[2];
  OperatorListState<int64_t>* late_state_ = nullptr;
  OperatorListState<int64_t>* seq_state_ = nullptr;
  uint64_t late_ = 0, next_seq_ = 0;
  RecordBatch pairs_;
  std::unique_ptr<ExprProgram> program_;
  std::vector<Field> fields_;
  std::string scratch_, uk_, row_;
};

std::unique_ptr<Operator> MakeJoin(const OperatorConfig& c) {
  JoinWindow w;
  if (!ParseJoinWindow(c, &w).ok()) return nullptr;  // checked at load (JoinSchema)
  if (w.size > 0) return std::make_unique<WindowJoin>(c, std::move(w));
  return std::make_unique<Join>(c);
}

// `on` names each input's key fields: one entry per input id, the same number of fields each.
Status JoinInputKeys(OperatorConfig* c) {
  const std::string what = "operator '" + c->id + "' (type join)";
  if (c->inputs.size() != 2)
    return Status::InvalidArgument(c->Where("inputs") + ": " + what + " joins two inputs, but it has " +
                                   std::to_string(c->inputs.size()));
  std::vector<std::vector<std::string>> keys(2);
  for (const ParamEntry& e : c->GetEntries("on")) {
    size_t side = e.key == c->inputs[0] ? 0 : e.key == c->inputs[1] ? 1 : 2;
    if (side == 2)
      return Status::InvalidArgument(e.location + ": " + what + ": on names '" + e.key + "', which is not one of its inputs (" +
                                     c->inputs[0] + ", " + c->inputs[1] + ")");
    keys[side].push_back(e.value);
  }
  for (size_t side = 0; side < 2; ++side)
    if (keys[side].empty())
      return Status::InvalidArgument(c->Where("on") + ": " + what + ": on must name the key fields of input '" +
                                     c->inputs[side] + "'");
  if (keys[0].size() != keys[1].size())
    return Status::InvalidArgument(c->Where("on") + ": " + what + ": on names " + std::to_string(keys[0].size()) +
                                   " key fields of '" + c->inputs[0] + "' but " + std::to_string(keys[1].size()) +
                                   " of '" + c->inputs[1] + "'; they pair up in order");
  c->input_key_by = std::move(keys);
  return Status::OK();
}

// The select entries, over the fields of both inputs.
Status JoinSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  if (inputs.size() != 2 || inputs[0] == nullptr || inputs[1] == nullptr)
    return Status::InvalidArgument(c.location + ": operator '" + c.id + "' (type join) needs both inputs' schemas");
  JoinWindow w;
  CAIRN_RETURN_IF_ERROR(ParseJoinWindow(c, &w));
  if (w.size > 0) {
    for (size_t side = 0; side < 2; ++side) {
      int f = -1;
      CAIRN_RETURN_IF_ERROR(JoinTimeField(c, w, side, *inputs[side], &f));
    }
  }
  SchemaRef pair;
  Status s = PairSchema(c, inputs[0], inputs[1], w.size > 0, &pair);
  if (!s.ok()) return Status::InvalidArgument(c.location + ": operator '" + c.id + "': " + s.message());
  std::unique_ptr<ExprProgram> p;
  std::vector<Field> fields;
  CAIRN_RETURN_IF_ERROR(CompileSelect(c, pair, &p, &fields));
  s = Schema::Make(std::move(fields), out);
  if (!s.ok()) return Status::InvalidArgument(c.Where("select") + ": operator '" + c.id + "': " + s.message());
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "join",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .input_keys = JoinInputKeys,
    .timers = true,
    .output_schema = JoinSchema,
    .params = {
        {.name = "on", .type = ParamType::kMapOfLists, .required = true,
         .doc = "input id -> its key field(s), for both inputs, e.g. `{auction: [seller], person: [id]}`; the i-th "
                "fields of the two inputs are compared for equality and must have one type"},
        {.name = "select", .type = ParamType::kMap, .required = true,
         .doc = "output field name -> [expression](#expressions) over the fields of both inputs, named "
                "`<input id>.<field>` (or `<field>` alone where only one input has it)"},
        {.name = "state_ttl", .type = ParamType::kDuration, .default_value = "0",
         .doc = "regular join: how long a record is kept for joining, by processing time (Flink's idle state "
                "retention); 0: for ever"},
        {.name = "window", .type = ParamType::kMap,
         .doc = "`{kind: tumble, size: D}`: a window join on event time: the records of both inputs are cut into "
                "tumbling windows of size D by their `time` field, and when the watermark passes a window's end "
                "every pair in it under one key is emitted; `select` may also read window_start and window_end. "
                "Unset (the default): a regular join"},
        {.name = "time", .type = ParamType::kMapOfLists,
         .doc = "window join (required there): input id -> its event-time field (a timestamp or an int64 of ms), "
                "for both inputs, e.g. `{bids: date_time, people: date_time}`"},
    },
    .doc = "An inner equi-join of its two inputs. Regular (no `window`, Flink SQL's `JOIN ... ON`): every record "
           "is kept in keyed state and emits one `select` record with every record of the other input that has its "
           "key and arrived before it, so each matching pair is emitted once; without `state_ttl` the state grows "
           "with the inputs. Windowed (`window`, Flink's window join): each pair of records with one key in one "
           "tumbling window of event time is emitted once the watermark passes the window's end, and the window's "
           "records are then dropped from state; a record whose window fired already is dropped and counted as "
           "records_late.",
    .create = MakeJoin,
});

}  // namespace cairn

// join: a regular (unwindowed) inner equi-join of two inputs, as Flink SQL's `a JOIN b ON ...`.
// Each input is hash-partitioned by its own key fields (`on: {LEFT: [fields], RIGHT: [fields]}`,
// the i-th fields of both of one type), so equal keys meet in one subtask. Every record is kept
// in keyed list state of its side ("left" / "right") and joined with every record of the other
// side's list under its key that is there already: each matching pair is emitted once, by the
// later of the two, whichever side it came on. The output is `select` (expressions over the
// pair's fields, named `<input id>.<field>`) evaluated a batch of pairs at a time.
//
// state_ttl (Flink's idle state retention, by processing time): a kept record older than it is
// no longer joined and is dropped from state the next time its key is read.
//
// Stored element of a side's list: the time it was stored (fixed64, ms since the epoch), then the
// record in the channel-state row encoding (engine/dataflow/record_codec.h).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/record_codec.h"
#include "engine/expr/expr.h"
#include "jobs/registry.h"
#include "operators/select_exprs.h"
#include "state/keyed_state_api.h"

namespace cairn {
namespace {

constexpr const char* kRowsType = "cairn.join.rows";

// The fields of both inputs, each named `<input id>.<field>`: what `select` reads.
Status PairSchema(const OperatorConfig& c, const SchemaRef& left, const SchemaRef& right, SchemaRef* out) {
  std::vector<Field> fields;
  for (size_t side = 0; side < 2; ++side)
    for (const Field& f : (side == 0 ? left : right)->fields()) fields.push_back({c.inputs[side] + "." + f.name, f.type});
  return Schema::Make(std::move(fields), out);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
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
    CAIRN_RETURN_IF_ERROR(PairSchema(config_, sides_[0].schema, sides_[1].schema, &pair));
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
        side == 0 ? AddPair(in, i, other.kept, j) : AddPair(other.kept, j, in, i);
      // Then this record is kept for the other side's later records.
      element_.clear();
      PutFixed64(&element_, static_cast<uint64_t>(now));
      EncodeRow(in, i, &element_);
      backend_->AppendToList(mine.state, key, hash, element_);
    }
    if (pairs_.empty()) return Status::OK();
    program_->Evaluate(pairs_);
    const size_t first = out->size(), n = pairs_.size();
    for (size_t k = 0; k < n; ++k) out->AddRow();
    for (size_t f = 0; f < fields_.size(); ++f) WriteColumn(program_->result(f), fields_[f].type, n, out, first, f);
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

  // Appends the pair (left row l of `lb`, right row r of `rb`) to pairs_.
  void AddPair(const RecordBatch& lb, size_t l, const RecordBatch& rb, size_t r) {
    const size_t row = pairs_.AddRow(), nl = lb.num_fields();
    for (size_t f = 0; f < nl; ++f) pairs_.CopyFieldFrom(lb, l, f, row, f);
    for (size_t f = 0; f < rb.num_fields(); ++f) pairs_.CopyFieldFrom(rb, r, f, row, nl + f);
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
  SchemaRef pair;
  Status s = PairSchema(c, inputs[0], inputs[1], &pair);
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
    .output_schema = JoinSchema,
    .params = {
        {.name = "on", .type = ParamType::kMapOfLists, .required = true,
         .doc = "input id -> its key field(s), for both inputs, e.g. `{auction: [seller], person: [id]}`; the i-th "
                "fields of the two inputs are compared for equality and must have one type"},
        {.name = "select", .type = ParamType::kMap, .required = true,
         .doc = "output field name -> [expression](#expressions) over the fields of both inputs, named "
                "`<input id>.<field>` (or `<field>` alone where only one input has it)"},
        {.name = "state_ttl", .type = ParamType::kDuration, .default_value = "0",
         .doc = "how long a record is kept for joining, by processing time (Flink's idle state retention); 0: for ever"},
    },
    .doc = "A regular inner equi-join of its two inputs (Flink SQL's `JOIN ... ON`): every record is kept in keyed "
           "state and emits one `select` record with every record of the other input that has its key and arrived "
           "before it, so each matching pair is emitted once. Without `state_ttl` the state grows with the inputs.",
    .create = MakeOperator<Join>,
});

}  // namespace cairn

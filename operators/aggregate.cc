// aggregate: per key (key_by), the functions of `aggregates` over every record of the key so
// far -- count(*), count(x), sum(x), min(x), max(x), avg(x) -- emitted as a changelog: with
// `emit: updates` (the default) one record per input record, the key fields then the current
// aggregates; with `emit: final`, one record per key when the input ends (bounded input).
// The accumulators of a key are one ValueState<Accumulators> ("acc"), so state is one entry
// per key on either backend; `cairn state dump` prints them as hex.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/record_codec.h"
#include "jobs/registry.h"
#include "state/keyed_state_api.h"

namespace cairn {
namespace {

// The encoded accumulators of one key (AggregateOp::Encode), a type of its own so that the
// checkpoint names it and `cairn state dump` shows bytes, not text.
struct Accumulators {
  std::string bytes;
};

}  // namespace

template <>
struct Serializer<Accumulators> {
  static constexpr const char* kName = "cairn.aggregate.accumulators";
  static void Write(const Accumulators& v, std::string* out) { out->append(v.bytes); }
  static bool Read(std::string_view s, Accumulators* v) {
    v->bytes.assign(s.data(), s.size());
    return true;
  }
};

namespace {

enum class Fn { kCountStar, kCount, kSum, kMin, kMax, kAvg };

struct Aggregate {
  std::string name;   // the output field
  Fn fn = Fn::kCountStar;
  int field = -1;     // input field (not for count(*))
  FieldType in = FieldType::kInt64;
  FieldType out = FieldType::kInt64;
};

// Parses "fn(arg)" of one `aggregates` entry against the input schema.
Status ParseAggregate(const ParamEntry& e, const Schema& input, const std::string& op, Aggregate* a) {
  auto error = [&](const std::string& what) {
    return Status::InvalidArgument(e.location + ": operator '" + op + "': aggregate '" + e.key + "' (\"" + e.value +
                                   "\"): " + what);
  };
  std::string text;
  for (char c : e.value)
    if (c != ' ' && c != '\t') text += c;
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close != text.size() - 1 || close < open)
    return error("expected function(field), e.g. sum(bytes) or count(*)");
  std::string fn = text.substr(0, open), arg = text.substr(open + 1, close - open - 1);
  for (char& c : fn) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  a->name = e.key;
  if (fn == "count" && arg == "*") {
    a->fn = Fn::kCountStar;
    a->out = FieldType::kInt64;
    return Status::OK();
  }
  if (fn == "count") a->fn = Fn::kCount;
  else if (fn == "sum") a->fn = Fn::kSum;
  else if (fn == "min") a->fn = Fn::kMin;
  else if (fn == "max") a->fn = Fn::kMax;
  else if (fn == "avg") a->fn = Fn::kAvg;
  else return error("unknown function '" + fn + "' (functions: count(*), count, sum, min, max, avg)");
  if (arg.empty()) return error(fn + " needs a field");
  a->field = input.IndexOf(arg);
  if (a->field < 0) return error("no field '" + arg + "' in the input " + input.ToString());
  a->in = input.field(static_cast<size_t>(a->field)).type;
  const bool numeric = a->in == FieldType::kInt64 || a->in == FieldType::kDouble;
  switch (a->fn) {
    case Fn::kCount: a->out = FieldType::kInt64; break;
    case Fn::kSum:
      if (!numeric) return error("sum needs an int64 or double field, and '" + arg + "' is " + FieldTypeName(a->in));
      a->out = a->in;
      break;
    case Fn::kAvg:
      if (!numeric) return error("avg needs an int64 or double field, and '" + arg + "' is " + FieldTypeName(a->in));
      a->out = FieldType::kDouble;
      break;
    default:  // min, max: any ordered type
      if (a->in == FieldType::kBool) return error(fn + " needs an ordered field, and '" + arg + "' is bool");
      a->out = a->in;
  }
  return Status::OK();
}

Status ParseAll(const OperatorConfig& c, const Schema& input, std::vector<Aggregate>* out) {
  out->clear();
  for (const ParamEntry& e : c.GetEntries("aggregates")) {
    for (const std::string& k : c.key_by)
      if (k == e.key)
        return Status::InvalidArgument(e.location + ": operator '" + c.id + "': aggregate '" + e.key +
                                       "' has the name of a key field");
    Aggregate a;
    CAIRN_RETURN_IF_ERROR(ParseAggregate(e, input, c.id, &a));
    out->push_back(std::move(a));
  }
  if (out->empty())
    return Status::InvalidArgument(c.Where("aggregates") + ": operator '" + c.id + "' has no aggregates");
  return Status::OK();
}

// One aggregate's accumulator: `seen` (a non-null value arrived), the value (count, sum, min or
// max; a string's bytes in `s`) and, for avg, a double sum with the count in `n`.
struct Acc {
  bool seen = false;
  uint64_t cell = 0;
  int64_t n = 0;
  std::string s;
};

double AsDouble(uint64_t cell) {
  double d;
  std::memcpy(&d, &cell, 8);
  return d;
}
uint64_t Bits(double d) {
  uint64_t c;
  std::memcpy(&c, &d, 8);
  return c;
}

class AggregateOp final : public Operator {
 public:
  explicit AggregateOp(const OperatorConfig& c) : config_(c), final_(c.GetString("emit") == "final") {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr) return Status::Internal("aggregate " + ctx.operator_id + " has no keyed state");
    CAIRN_RETURN_IF_ERROR(ctx.keyed->GetValueState("acc", &acc_));
    // The same state at the byte level, to visit every key at the end (emit: final).
    CAIRN_RETURN_IF_ERROR(ctx.keyed->Declare(StateDescriptor{StateKind::kValue, Serializer<Accumulators>::kName, "acc"},
                                             &acc_id_));
    backend_ = ctx.keyed;
    output_ = ctx.output_schema;
    return Status::OK();
  }

  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    if (in.schema() != input_) {
      CAIRN_RETURN_IF_ERROR(KeySelector::Make(*in.schema(), config_.key_by, &key_));
      CAIRN_RETURN_IF_ERROR(ParseAll(config_, *in.schema(), &aggs_));
      input_ = in.schema();
      accs_.resize(aggs_.size());
    }
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view key = key_.Key(in, i, &scratch_);
      uint64_t hash = KeyHash(key);
      if (acc_->Get(key, hash, &bytes_)) {
        if (!Decode(bytes_.bytes)) return Status::Corruption("aggregate " + config_.id + ": an accumulator does not decode");
      } else {
        for (Acc& a : accs_) a = Acc{};
      }
      for (size_t k = 0; k < aggs_.size(); ++k) Accumulate(aggs_[k], in, i, &accs_[k]);
      Encode(&bytes_.bytes);
      acc_->Put(key, hash, bytes_);
      if (!final_) Emit(in, i, out);
    }
    return Status::OK();
  }

  Status Finish(RecordBatch* out) override {
    if (!final_ || input_ == nullptr) return Status::OK();
    // One record per key: the key fields are decoded from the key bytes.
    std::vector<FieldType> types;
    std::vector<int> at;
    for (size_t k = 0; k < key_.fields().size(); ++k) {
      types.push_back(input_->field(static_cast<size_t>(key_.fields()[k])).type);
      at.push_back(static_cast<int>(k));
    }
    Status status;
    backend_->ForEachEntry(acc_id_, [&](std::string_view key, std::string_view, std::string_view value) {
      if (!status.ok()) return;
      if (!Decode(value)) {
        status = Status::Corruption("aggregate " + config_.id + ": an accumulator does not decode");
        return;
      }
      size_t r = out->AddRow();
      if (!DecodeKeyInto(key, types, at, out, r)) {
        status = Status::Corruption("aggregate " + config_.id + ": a key does not decode");
        return;
      }
      WriteAggregates(out, r);
    });
    return status;
  }

 private:
  void Accumulate(const Aggregate& g, const RecordBatch& in, size_t i, Acc* a) {
    if (g.fn == Fn::kCountStar) {
      a->seen = true;
      a->cell = static_cast<uint64_t>(static_cast<int64_t>(a->cell) + 1);
      return;
    }
    size_t f = static_cast<size_t>(g.field);
    if (in.IsNull(i, f)) return;
    const bool first = !a->seen;
    a->seen = true;
    switch (g.fn) {
      case Fn::kCount: a->cell = static_cast<uint64_t>(static_cast<int64_t>(a->cell) + 1); return;
      case Fn::kSum:
        if (g.in == FieldType::kDouble) {
          a->cell = Bits((first ? 0.0 : AsDouble(a->cell)) + in.GetDouble(i, f));
        } else {
          a->cell = static_cast<uint64_t>(static_cast<int64_t>(first ? 0 : a->cell) + in.GetInt64(i, f));
        }
        return;
      case Fn::kAvg:
        a->cell = Bits((first ? 0.0 : AsDouble(a->cell)) +
                       (g.in == FieldType::kDouble ? in.GetDouble(i, f) : static_cast<double>(in.GetInt64(i, f))));
        a->n = (first ? 0 : a->n) + 1;
        return;
      default: {
        const bool want_less = g.fn == Fn::kMin;
        if (IsVariableLength(g.in)) {
          std::string_view v = in.GetString(i, f);
          if (first || (want_less ? v < a->s : v > a->s)) a->s.assign(v.data(), v.size());
        } else if (g.in == FieldType::kDouble) {
          double v = in.GetDouble(i, f);
          if (first || (want_less ? v < AsDouble(a->cell) : v > AsDouble(a->cell))) a->cell = Bits(v);
        } else {
          int64_t v = in.GetInt64(i, f);
          if (first || (want_less ? v < static_cast<int64_t>(a->cell) : v > static_cast<int64_t>(a->cell)))
            a->cell = static_cast<uint64_t>(v);
        }
      }
    }
  }

  void Emit(const RecordBatch& in, size_t i, RecordBatch* out) {
    size_t r = out->AddRow();
    const std::vector<int>& kf = key_.fields();
    for (size_t k = 0; k < kf.size(); ++k) out->CopyFieldFrom(in, i, static_cast<size_t>(kf[k]), r, k);
    WriteAggregates(out, r);
  }

  void WriteAggregates(RecordBatch* out, size_t r) {
    const size_t base = key_.fields().size();
    for (size_t k = 0; k < aggs_.size(); ++k) {
      const Aggregate& g = aggs_[k];
      const Acc& a = accs_[k];
      size_t f = base + k;
      if (g.fn == Fn::kCountStar || g.fn == Fn::kCount) {
        out->SetInt64(r, f, a.seen ? static_cast<int64_t>(a.cell) : 0);
        continue;
      }
      if (!a.seen) continue;  // null: no non-null value yet (SQL)
      if (g.fn == Fn::kAvg) {
        out->SetDouble(r, f, AsDouble(a.cell) / static_cast<double>(a.n));
      } else if (IsVariableLength(g.out)) {
        out->SetString(r, f, a.s);
      } else if (g.out == FieldType::kDouble) {
        out->SetDouble(r, f, AsDouble(a.cell));
      } else {
        out->SetInt64(r, f, static_cast<int64_t>(a.cell));
      }
    }
  }

  // Per aggregate: seen (1 byte), the cell (8), for avg the count (8), for a string min/max
  // its bytes (length-prefixed) instead of the cell.
  void Encode(std::string* out) const {
    out->clear();
    for (size_t k = 0; k < aggs_.size(); ++k) {
      const Acc& a = accs_[k];
      out->push_back(a.seen ? 1 : 0);
      if (IsVariableLength(aggs_[k].out) && aggs_[k].fn != Fn::kCount && aggs_[k].fn != Fn::kCountStar) {
        PutLengthPrefixed(out, a.s);
      } else {
        PutFixed64(out, a.cell);
      }
      if (aggs_[k].fn == Fn::kAvg) PutFixed64(out, static_cast<uint64_t>(a.n));
    }
  }
  bool Decode(std::string_view bytes) {
    Decoder d(bytes);
    for (size_t k = 0; k < aggs_.size(); ++k) {
      Acc& a = accs_[k];
      uint8_t seen;
      if (!d.GetByte(&seen) || seen > 1) return false;
      a.seen = seen == 1;
      if (IsVariableLength(aggs_[k].out) && aggs_[k].fn != Fn::kCount && aggs_[k].fn != Fn::kCountStar) {
        std::string_view s;
        if (!d.GetLengthPrefixedView(&s)) return false;
        a.s.assign(s.data(), s.size());
      } else if (!d.GetFixed64(&a.cell)) {
        return false;
      }
      uint64_t n = 0;
      if (aggs_[k].fn == Fn::kAvg && !d.GetFixed64(&n)) return false;
      a.n = static_cast<int64_t>(n);
    }
    return d.done();
  }

  const OperatorConfig config_;
  const bool final_;
  KeyedStateBackend* backend_ = nullptr;
  ValueState<Accumulators>* acc_ = nullptr;
  StateId acc_id_ = 0;
  SchemaRef output_, input_;
  KeySelector key_;
  std::vector<Aggregate> aggs_;
  std::vector<Acc> accs_;
  std::string scratch_;
  Accumulators bytes_;
};

Status AggregateSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  const std::string& emit = c.GetString("emit");
  if (emit != "updates" && emit != "final")
    return Status::InvalidArgument(c.Where("emit") + ": parameter 'emit' of operator '" + c.id +
                                   "' must be updates or final, got '" + emit + "'");
  SchemaRef in;
  CAIRN_RETURN_IF_ERROR(CommonInputSchema(c, inputs, "aggregates the same fields of all its inputs", &in));
  std::vector<Aggregate> aggs;
  CAIRN_RETURN_IF_ERROR(ParseAll(c, *in, &aggs));
  std::vector<Field> fields;
  for (const std::string& k : c.key_by) fields.push_back(in->field(static_cast<size_t>(in->IndexOf(k))));
  for (const Aggregate& a : aggs) fields.push_back({a.name, a.out});
  return Schema::Make(std::move(fields), out);
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "aggregate",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .output_schema = AggregateSchema,
    .params = {
        {.name = "aggregates", .type = ParamType::kMap, .required = true,
         .doc = "output field -> count(*), count(x), sum(x), min(x), max(x) or avg(x) of an input field x"},
        {.name = "emit", .type = ParamType::kString, .default_value = "updates",
         .doc = "updates: one record per input record (a changelog); final: one record per key when the input ends"},
    },
    .doc = "Keyed by its key_by fields: aggregates of every record of the key so far, emitted as the key "
           "fields then each aggregate in the order of `aggregates`. count(*) counts records, count(x) the "
           "non-null values of x; sum, min, max and avg skip nulls and are null until a value arrived. "
           "sum keeps x's type (int64 or double), avg is a double, min and max take any type but bool.",
    .create = MakeOperator<AggregateOp>,
});

}  // namespace cairn

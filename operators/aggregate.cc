// aggregate: per key (key_by), the functions of `aggregates` over every record of the key so
// far -- count(*), count(x), sum(x), min(x), max(x), avg(x) -- emitted as a changelog: with
// `emit: updates` (the default) one record per input record, the key fields then the current
// aggregates; with `emit: final`, one record per key when the input ends (bounded input).
// The accumulators of a key are one ValueState<Accumulators> ("acc"), so state is one entry
// per key on either backend; `cairn state dump` prints them as hex.
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/record_codec.h"
#include "jobs/registry.h"
#include "operators/aggregate_functions.h"
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
      CAIRN_RETURN_IF_ERROR(ParseAggregates(config_, *in.schema(), {}, &aggs_));
      input_ = in.schema();
      accs_ = AggregateAccumulators(&aggs_);
    }
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view key = key_.Key(in, i, &scratch_);
      uint64_t hash = KeyHash(key);
      if (acc_->Get(key, hash, &bytes_)) {
        if (!accs_.Decode(bytes_.bytes))
          return Status::Corruption("aggregate " + config_.id + ": an accumulator does not decode");
      } else {
        accs_.Reset();
      }
      accs_.Add(in, i);
      accs_.Encode(&bytes_.bytes);
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
      if (!accs_.Decode(value)) {
        status = Status::Corruption("aggregate " + config_.id + ": an accumulator does not decode");
        return;
      }
      size_t r = out->AddRow();
      if (!DecodeKeyInto(key, types, at, out, r)) {
        status = Status::Corruption("aggregate " + config_.id + ": a key does not decode");
        return;
      }
      accs_.Write(out, r, key_.fields().size());
    });
    return status;
  }

 private:
  void Emit(const RecordBatch& in, size_t i, RecordBatch* out) {
    size_t r = out->AddRow();
    const std::vector<int>& kf = key_.fields();
    for (size_t k = 0; k < kf.size(); ++k) out->CopyFieldFrom(in, i, static_cast<size_t>(kf[k]), r, k);
    accs_.Write(out, r, kf.size());
  }

  const OperatorConfig config_;
  const bool final_;
  KeyedStateBackend* backend_ = nullptr;
  ValueState<Accumulators>* acc_ = nullptr;
  StateId acc_id_ = 0;
  SchemaRef output_, input_;
  KeySelector key_;
  std::vector<AggregateSpec> aggs_;
  AggregateAccumulators accs_;
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
  std::vector<AggregateSpec> aggs;
  CAIRN_RETURN_IF_ERROR(ParseAggregates(c, *in, {}, &aggs));
  std::vector<Field> fields;
  for (const std::string& k : c.key_by) fields.push_back(in->field(static_cast<size_t>(in->IndexOf(k))));
  for (const AggregateSpec& a : aggs) fields.push_back({a.name, a.out});
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

#include "jobs/job_schemas.h"

#include <map>

#include "jobs/registry.h"

namespace cairn {

namespace {

Status ErrorAt(const std::string& place, const std::string& what) { return Status::InvalidArgument(place + ": " + what); }

// The schema `op` emits given `inputs` (null: not derived yet), with the key_by checks.
Status DeriveOne(const OperatorConfig& op, const OperatorPlaces& at, const std::vector<SchemaRef>& inputs,
                 SchemaRef* out) {
  const OperatorType& t = *FindOperatorType(op.type);
  const std::string what = "operator '" + op.id + "'";
  const SchemaRef* first = nullptr;
  size_t first_k = 0;
  // Keys of different inputs must encode alike: their i-th fields have one type.
  for (size_t k = 0; k < inputs.size(); ++k) {
    const SchemaRef& in = inputs[k];
    if (in == nullptr) continue;
    const std::vector<std::string>& keys = op.KeyByOf(k);
    const std::string& place = op.input_key_by.empty() ? at.key_by : op.Where("on");
    for (size_t j = 0; j < keys.size(); ++j) {
      const std::string& f = keys[j];
      int i = in->IndexOf(f);
      if (i < 0)
        return ErrorAt(place, what + (op.input_key_by.empty() ? " has key_by '" + op.KeyByText() + "'" : " is keyed by '" + f + "'") +
                                  ", but its input '" + op.inputs[k] + "' emits " + in->ToString() +
                                  ", which has no field '" + f + "'");
      if (first == nullptr) continue;
      const std::string& g = op.KeyByOf(first_k)[j];
      const FieldType a = (*first)->field(static_cast<size_t>((*first)->IndexOf(g))).type;
      const FieldType b = in->field(static_cast<size_t>(i)).type;
      if (a != b)
        return ErrorAt(place, what + " is keyed by '" + g + "', which is " + FieldTypeName(a) + " in input '" +
                                  op.inputs[first_k] + "', and by '" + f + "', which is " + FieldTypeName(b) +
                                  " in input '" + op.inputs[k] + "'");
    }
    if (first == nullptr) {
      first = &in;
      first_k = k;
    }
  }
  if (t.output_schema) return t.output_schema(op, inputs, out);
  if (t.role == OperatorRole::kSink) {
    *out = nullptr;
    return Status::OK();
  }
  // A transform without a schema of its own emits what it reads: all inputs alike.
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr || inputs[k] == *first || *inputs[k] == **first) continue;
    return ErrorAt(at.input[k], what + " (type " + t.name + ") emits what it reads, so its inputs must carry one " +
                                    "schema; but '" + op.inputs[0] + "' emits " + (*first)->ToString() + " and '" +
                                    op.inputs[k] + "' emits " + inputs[k]->ToString());
  }
  *out = *first;
  return Status::OK();
}

}  // namespace

Status DeriveSchemas(JobSpec* spec, const std::vector<OperatorPlaces>& places) {
  const size_t n = spec->operators.size();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) index[spec->operators[i].id] = i;
  std::vector<SchemaRef> schemas(n);
  std::vector<bool> done(n, false), partial(n, false);
  auto inputs_of = [&](size_t i, bool* all_known, bool* any_known) {
    std::vector<SchemaRef> in;
    *all_known = true;
    *any_known = false;
    for (const std::string& id : spec->operators[i].inputs) {
      size_t j = index.at(id);
      in.push_back(done[j] ? schemas[j] : nullptr);
      *all_known &= done[j];
      *any_known |= done[j];
    }
    return in;
  };
  for (size_t derived = 0; derived < n;) {
    bool progress = false;
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      bool all, any;
      std::vector<SchemaRef> in = inputs_of(i, &all, &any);
      if (!all) continue;
      CAIRN_RETURN_IF_ERROR(DeriveOne(spec->operators[i], places[i], in, &schemas[i]));
      done[i] = progress = true;
      ++derived;
    }
    if (progress) continue;
    // Only cycles are left: derive the first operator fed from outside its cycle without the
    // inputs it closes the cycle with; it is checked again once they are known.
    for (size_t i = 0; i < n && !progress; ++i) {
      if (done[i]) continue;
      bool all, any;
      std::vector<SchemaRef> in = inputs_of(i, &all, &any);
      if (!any) continue;
      CAIRN_RETURN_IF_ERROR(DeriveOne(spec->operators[i], places[i], in, &schemas[i]));
      done[i] = partial[i] = progress = true;
      ++derived;
    }
    if (!progress) return Status::Internal("schema derivation found no operator to derive");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!partial[i]) continue;
    bool all, any;
    std::vector<SchemaRef> in = inputs_of(i, &all, &any);
    SchemaRef again;
    CAIRN_RETURN_IF_ERROR(DeriveOne(spec->operators[i], places[i], in, &again));
    if ((again == nullptr) != (schemas[i] == nullptr) || (again != nullptr && *again != *schemas[i]))
      return ErrorAt(places[i].op, "operator '" + spec->operators[i].id + "' emits " + schemas[i]->ToString() +
                                       " from its inputs outside the cycle but " +
                                       (again ? again->ToString() : std::string("nothing")) +
                                       " once the cycle is closed: a cycle must carry one schema");
  }
  for (size_t i = 0; i < n; ++i) {
    const OperatorConfig& op = spec->operators[i];
    if (!op.watermark.enabled) continue;
    const SchemaRef& s = schemas[i];
    int f = s == nullptr ? -1 : s->IndexOf(op.watermark.field);
    if (f < 0)
      return ErrorAt(op.watermark.field_location, "the watermark field '" + op.watermark.field + "' of operator '" +
                                                      op.id + "' is not a field of what it emits, " +
                                                      (s ? s->ToString() : std::string("nothing")));
    FieldType t = s->field(static_cast<size_t>(f)).type;
    if (t != FieldType::kTimestamp && t != FieldType::kInt64)
      return ErrorAt(op.watermark.field_location, "the watermark field '" + op.watermark.field + "' of operator '" +
                                                      op.id + "' is " + FieldTypeName(t) +
                                                      ", but event time must be a timestamp or an int64 (ms)");
  }
  spec->schemas = std::move(schemas);
  return Status::OK();
}

}  // namespace cairn

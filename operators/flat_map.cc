// flat_map: splits a string field of each record into pieces and emits one record per piece:
// the input's other fields copied, the split field replaced by the piece (named `into`, at the
// same position). Without `separator` it splits as tokenize does, at runs of ASCII whitespace
// (no empty pieces); with one, at each occurrence of that literal string (empty pieces kept).
// A NULL split field emits nothing.
#include <array>
#include <string>
#include <vector>

#include "jobs/registry.h"
#include "operators/text_params.h"

namespace cairn {
namespace {

class FlatMap final : public Operator {
 public:
  explicit FlatMap(const OperatorConfig& c) : split_(c.GetString("split")), separator_(c.GetString("separator")) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.input_schemas.empty() || ctx.input_schemas[0] == nullptr)
      return Status::Internal("flat_map " + ctx.operator_id + " has no input schema");
    int f = ctx.input_schemas[0]->IndexOf(split_);
    if (f < 0) return Status::InvalidArgument("flat_map " + ctx.operator_id + ": no field '" + split_ + "'");
    field_ = static_cast<size_t>(f);
    return Status::OK();
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    const size_t fields = in.num_fields();
    for (size_t i = 0; i < in.size(); ++i) {
      if (in.IsNull(i, field_)) continue;
      const std::string_view s = in.GetString(i, field_);
      auto emit = [&](std::string_view piece) {
        size_t r = out->AddRow();
        for (size_t g = 0; g < fields; ++g)
          if (g != field_) out->CopyFieldFrom(in, i, g, r, g);
        out->SetString(r, field_, piece);
      };
      if (separator_.empty()) {
        const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
        size_t n = s.size(), j = 0;
        while (j < n) {
          while (j < n && kIsAsciiSpace[p[j]]) ++j;
          size_t start = j;
          while (j < n && !kIsAsciiSpace[p[j]]) ++j;
          if (j > start) emit(s.substr(start, j - start));
        }
      } else {
        size_t at = 0;
        for (size_t hit; (hit = s.find(separator_, at)) != std::string_view::npos; at = hit + separator_.size())
          emit(s.substr(at, hit - at));
        emit(s.substr(at));
      }
    }
    return Status::OK();
  }

 private:
  const std::string split_;
  const std::string separator_;
  size_t field_ = 0;
};

// The input's fields, with the split field renamed to `into` (a string).
Status FlatMapSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  const std::string what = "operator '" + c.id + "' (type flat_map)";
  const std::string& split = c.GetString("split");
  const std::string into = c.GetString("into").empty() ? split : c.GetString("into");
  const SchemaRef* first = nullptr;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr) continue;
    if (first == nullptr) {
      first = &inputs[k];
    } else if (*inputs[k] != **first) {
      return Status::InvalidArgument(c.location + ": " + what + " needs its inputs to carry one schema; but '" +
                                     c.inputs[0] + "' emits " + (*first)->ToString() + " and '" + c.inputs[k] +
                                     "' emits " + inputs[k]->ToString());
    }
  }
  if (first == nullptr) return Status::InvalidArgument(c.location + ": " + what + " has no input whose schema is known");
  const Schema& in = **first;
  const int f = in.IndexOf(split);
  if (f < 0)
    return Status::InvalidArgument(c.Where("split") + ": " + what + " splits field '" + split +
                                   "', which its input does not have (fields: " + in.FieldNames() + ")");
  if (in.field(static_cast<size_t>(f)).type != FieldType::kString)
    return Status::InvalidArgument(c.Where("split") + ": " + what + " splits field '" + split + "', which is " +
                                   FieldTypeName(in.field(static_cast<size_t>(f)).type) + "; it must be a string");
  std::vector<Field> fields = in.fields();
  fields[static_cast<size_t>(f)].name = into;
  Status s = Schema::Make(std::move(fields), out);
  if (!s.ok())
    return Status::InvalidArgument(c.Where("into") + ": " + what + " names its pieces '" + into +
                                   "', but its input already has a field of that name (fields: " + in.FieldNames() +
                                   ")");
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "flat_map",
    .role = OperatorRole::kTransform,
    .output_schema = FlatMapSchema,
    .params = {{.name = "split", .type = ParamType::kString, .required = true, .doc = "the string field to split"},
               {.name = "into",
                .type = ParamType::kString,
                .default_value = "",
                .doc = "the name of the field that holds each piece, at the split field's position; empty (the "
                       "default) keeps the split field's name"},
               {.name = "separator",
                .type = ParamType::kString,
                .default_value = "",
                .doc = "split at each occurrence of this string, keeping empty pieces; empty (the default) splits "
                       "at runs of ASCII whitespace as tokenize does, without empty pieces"}},
    .doc = "Splits the string field `split` of each record into pieces and emits one record per piece: the other "
           "fields copied, the piece in field `into` at the split field's position. A NULL field emits nothing.",
    .create = MakeOperator<FlatMap>,
});

}  // namespace cairn

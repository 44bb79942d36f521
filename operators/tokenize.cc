// tokenize: splits lines into words at ASCII whitespace; every other byte (UTF-8 included) is
// part of a word and passes through untouched.
#include <array>

#include "jobs/registry.h"
#include "operators/text_params.h"

namespace cairn {
namespace {

class Tokenize final : public Operator {
 public:
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view line = in.GetString(i, 0);
      const unsigned char* p = reinterpret_cast<const unsigned char*>(line.data());
      size_t n = line.size(), j = 0;
      while (j < n) {
        while (j < n && kIsAsciiSpace[p[j]]) ++j;
        size_t start = j;
        while (j < n && !kIsAsciiSpace[p[j]]) ++j;
        if (j > start) out->AppendRow().SetString(0, line.substr(start, j - start));
      }
    }
    return Status::OK();
  }
};

// Splits the first field, a string (a line); emits (word string).
Status TokenizeSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  for (const SchemaRef& in : inputs) {
    if (in != nullptr && (in->empty() || in->field(0).type != FieldType::kString))
      return Status::InvalidArgument(c.location + ": operator '" + c.id + "' (type tokenize) splits the first " +
                                     "field of its input, which must be a string, but its input carries " +
                                     in->ToString() + "; flat_map splits any string field");
  }
  static const SchemaRef schema = MakeSchema({{"word", FieldType::kString}});
  *out = schema;
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "tokenize",
    .role = OperatorRole::kTransform,
    .output_schema = TokenizeSchema,
    .doc = "Splits each line (its input's first field, a string) into words: maximal runs of bytes that are not ASCII "
           "whitespace (space, \\t, \\n, \\r, \\v, \\f). Bytes pass through untouched.",
    .create = MakeOperator<Tokenize>,
});

}  // namespace cairn

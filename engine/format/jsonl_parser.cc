#include "engine/format/jsonl_parser.h"

#include <simdjson.h>

#include <cstring>
#include <vector>

#include "engine/format/values.h"

namespace cairn {
namespace {

using simdjson::dom::element_type;

const char* JsonTypeName(element_type t) {
  switch (t) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::BOOL: return "a bool";
    case element_type::NULL_VALUE: return "null";
  }
  return "?";
}

// The value as JSON text, shortened, for messages.
std::string Token(const simdjson::dom::element& v) {
  std::string t = simdjson::minify(v);
  if (t.size() > 40) t = t.substr(0, 40) + "...";
  return t;
}

std::string Invalid(simdjson::error_code e) { return std::string("invalid JSON: ") + simdjson::error_message(e); }

class JsonlParser final : public RecordParser {
 public:
  explicit JsonlParser(SchemaRef schema) : schema_(std::move(schema)), values_(schema_->size()) {}

  bool Parse(std::string_view record, RecordBatch* out, RecordError* err) override {
    err->field = -1;
    if (pad_.capacity() < record.size() + simdjson::SIMDJSON_PADDING) pad_.reserve(record.size() + simdjson::SIMDJSON_PADDING);
    pad_.assign(record.data(), record.size());
    simdjson::dom::element doc;
    simdjson::error_code e = parser_.parse(pad_.data(), pad_.size(), false).get(doc);
    if (e) {
      err->why = Invalid(e);
      return false;
    }
    simdjson::dom::object obj;
    if (doc.get(obj)) {
      err->why = std::string("expected a JSON object, got ") + JsonTypeName(doc.type());
      return false;
    }
    for (FieldValue& v : values_) v = FieldValue{};
    uint64_t seen = 0;
    for (auto [key, value] : obj) {
      int f = schema_->IndexOf(key);
      if (f < 0) continue;  // not in the schema: ignored
      err->field = f;
      if (seen >> f & 1) {
        err->why = "duplicate key";
        return false;
      }
      seen |= uint64_t{1} << f;
      if (!Value(value, schema_->field(static_cast<size_t>(f)).type, &values_[static_cast<size_t>(f)], &err->why))
        return false;
      err->field = -1;
    }
    CommitRow(values_, out);
    return true;
  }

 private:
  // One value of field type `t`; false with *why set when it does not fit.
  static bool Value(const simdjson::dom::element& v, FieldType t, FieldValue* out, std::string* why) {
    const element_type jt = v.type();
    out->null = jt == element_type::NULL_VALUE;
    if (out->null) return true;
    const bool number = jt == element_type::INT64 || jt == element_type::UINT64 || jt == element_type::DOUBLE;
    auto wrong = [&](const char* want) {
      *why = std::string("expected ") + want + ", got " + JsonTypeName(jt) + " " + Token(v);
      return false;
    };
    switch (t) {
      case FieldType::kString:
      case FieldType::kBytes:
        if (jt != element_type::STRING) return wrong("a string");
        out->text = v.get_string().value_unsafe();
        return true;
      case FieldType::kInt64:
        if (!number) return wrong("an integer");
        if (jt != element_type::INT64) {
          *why = "expected an int64, got " + Token(v);
          return false;
        }
        out->cell = static_cast<uint64_t>(v.get_int64().value_unsafe());
        return true;
      case FieldType::kDouble: {
        if (!number) return wrong("a number");
        double d = v.get_double().value_unsafe();
        std::memcpy(&out->cell, &d, 8);
        return true;
      }
      case FieldType::kBool:
        if (jt != element_type::BOOL) return wrong("true or false");
        out->cell = v.get_bool().value_unsafe() ? 1 : 0;
        return true;
      case FieldType::kTimestamp: {
        int64_t ms;
        if (jt == element_type::INT64) {
          ms = v.get_int64().value_unsafe();
        } else if (jt == element_type::STRING) {
          if (!ParseTimestampText(v.get_string().value_unsafe(), &ms, why)) return false;
        } else if (number) {
          *why = "expected a timestamp (integer ms or ISO-8601 string), got " + Token(v);
          return false;
        } else {
          return wrong("a timestamp (integer ms or ISO-8601 string)");
        }
        out->cell = static_cast<uint64_t>(ms);
        return true;
      }
    }
    *why = "unknown field type";
    return false;
  }

  SchemaRef schema_;
  simdjson::dom::parser parser_;
  std::string pad_;
  std::vector<FieldValue> values_;
};

}  // namespace

std::unique_ptr<RecordParser> NewJsonlParser(SchemaRef schema) { return std::make_unique<JsonlParser>(std::move(schema)); }

}  // namespace cairn

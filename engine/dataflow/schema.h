// A Schema names and types the fields of the records on one edge: a row of named fields, each
// of one FieldType and nullable. Schemas are derived when a job loads (jobs/schema_derivation)
// and travel with every RecordBatch as a shared, immutable SchemaRef.
//
// Contract: a Schema is immutable once made and shared across threads through SchemaRef. Field
// names are unique and at most kMaxFields fields are allowed (Make checks both).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace cairn {

enum class FieldType : uint8_t {
  kString = 0,     // UTF-8 text
  kBytes = 1,      // arbitrary bytes
  kInt64 = 2,
  kDouble = 3,
  kBool = 4,
  kTimestamp = 5,  // milliseconds since the Unix epoch (int64)
};
// "string", "bytes", "int64", "double", "bool", "timestamp".
const char* FieldTypeName(FieldType t);
// Parses one of the names above; false for anything else.
bool ParseFieldType(std::string_view name, FieldType* t);
// The list of names, for messages: "string, bytes, int64, double, bool, timestamp".
const char* FieldTypeNames();
// String and bytes values live in the batch's arena; the others in the row's cell.
inline bool IsVariableLength(FieldType t) { return t == FieldType::kString || t == FieldType::kBytes; }
// int64 and timestamp share one representation.
inline bool IsInt64Like(FieldType t) { return t == FieldType::kInt64 || t == FieldType::kTimestamp; }

struct Field {
  std::string name;
  FieldType type = FieldType::kString;
  bool operator==(const Field& o) const { return name == o.name && type == o.type; }
};

class Schema {
 public:
  static constexpr size_t kMaxFields = 64;  // one null bit per field in a 64-bit word

  Schema() = default;
  // Unchecked; use Make for fields that come from users.
  explicit Schema(std::vector<Field> fields);
  // InvalidArgument for a duplicate or empty field name or more than kMaxFields fields.
  static Status Make(std::vector<Field> fields, std::shared_ptr<const Schema>* out);

  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  const Field& field(size_t i) const { return fields_[i]; }
  const std::vector<Field>& fields() const { return fields_; }
  // The index of the field called `name`, or -1.
  int IndexOf(std::string_view name) const;
  // True when some field is a string or bytes field.
  bool has_variable_length() const { return has_variable_length_; }
  // "(word string, count int64)".
  std::string ToString() const;
  // "word, count".
  std::string FieldNames() const;

  bool operator==(const Schema& o) const { return fields_ == o.fields_; }
  bool operator!=(const Schema& o) const { return !(*this == o); }

 private:
  std::vector<Field> fields_;
  bool has_variable_length_ = false;
};

using SchemaRef = std::shared_ptr<const Schema>;

// A shared schema of the given fields (unchecked).
SchemaRef MakeSchema(std::vector<Field> fields);

}  // namespace cairn

#include "engine/dataflow/schema.h"

#include "engine/dataflow/record_batch.h"

#include <set>
#include <utility>

namespace cairn {

namespace {
constexpr const char* kTypeNames[] = {"string", "bytes", "int64", "double", "bool", "timestamp"};
}

const char* FieldTypeName(FieldType t) { return kTypeNames[static_cast<size_t>(t)]; }

const char* FieldTypeNames() { return "string, bytes, int64, double, bool, timestamp"; }

bool ParseFieldType(std::string_view name, FieldType* t) {
  for (size_t i = 0; i < std::size(kTypeNames); ++i) {
    if (name == kTypeNames[i]) {
      *t = static_cast<FieldType>(i);
      return true;
    }
  }
  return false;
}

Schema::Schema(std::vector<Field> fields) : fields_(std::move(fields)) {
  for (const Field& f : fields_) has_variable_length_ |= IsVariableLength(f.type);
}

Status Schema::Make(std::vector<Field> fields, std::shared_ptr<const Schema>* out) {
  if (fields.size() > kMaxFields) {
    return Status::InvalidArgument("a record has at most " + std::to_string(kMaxFields) + " fields, not " +
                                   std::to_string(fields.size()));
  }
  std::set<std::string> seen;
  for (const Field& f : fields) {
    if (f.name.empty()) return Status::InvalidArgument("a field name is empty");
    if (!seen.insert(f.name).second) return Status::InvalidArgument("field '" + f.name + "' appears twice");
  }
  *out = std::make_shared<const Schema>(std::move(fields));
  return Status::OK();
}

int Schema::IndexOf(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Schema::ToString() const {
  std::string s = "(";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) s += ", ";
    s += fields_[i].name;
    s += ' ';
    s += FieldTypeName(fields_[i].type);
  }
  return s + ")";
}

std::string Schema::FieldNames() const {
  std::string s;
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) s += ", ";
    s += fields_[i].name;
  }
  return s;
}

SchemaRef MakeSchema(std::vector<Field> fields) { return std::make_shared<const Schema>(std::move(fields)); }

const SchemaRef& KeyValueSchema() {
  static const SchemaRef schema =
      MakeSchema({{"key", FieldType::kString}, {"a", FieldType::kInt64}, {"b", FieldType::kInt64}});
  return schema;
}

}  // namespace cairn

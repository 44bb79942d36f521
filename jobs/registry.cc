#include "jobs/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cairn {

std::function<Status(const OperatorConfig&, const std::vector<SchemaRef>&, SchemaRef*)> FixedSchema(
    std::vector<Field> fields) {
  SchemaRef schema = MakeSchema(std::move(fields));
  return [schema](const OperatorConfig&, const std::vector<SchemaRef>&, SchemaRef* out) {
    *out = schema;
    return Status::OK();
  };
}

Status CommonInputSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, const std::string& why,
                         SchemaRef* out) {
  const SchemaRef* first = nullptr;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr) continue;
    if (first == nullptr) {
      first = &inputs[k];
    } else if (inputs[k] != *first && *inputs[k] != **first) {
      return Status::InvalidArgument(c.location + ": operator '" + c.id + "' (type " + c.type + ") " + why +
                                     ", so its inputs must carry one schema; but '" + c.inputs[first - inputs.data()] +
                                     "' emits " + (*first)->ToString() + " and '" + c.inputs[k] + "' emits " +
                                     inputs[k]->ToString());
    }
  }
  if (first == nullptr)
    return Status::InvalidArgument(c.location + ": operator '" + c.id + "' has no input whose schema is known");
  *out = *first;
  return Status::OK();
}

const char* ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kString: return "string";
    case ParamType::kInt: return "integer";
    case ParamType::kDouble: return "number";
    case ParamType::kDuration: return "duration";
    case ParamType::kBool: return "boolean";
    case ParamType::kMap: return "map";
    case ParamType::kList: return "list";
    case ParamType::kMapOfLists: return "map of lists";
  }
  return "?";
}

const ParamSpec* OperatorType::FindParam(std::string_view n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

namespace {

std::vector<OperatorType>& Table() {
  static std::vector<OperatorType> table;  // sorted by name
  return table;
}

}  // namespace

bool RegisterOperatorType(OperatorType type) {
  if (type.name.empty() || !type.create) {
    fprintf(stderr, "cairn: operator type '%s' is registered without a %s\n", type.name.c_str(),
            type.name.empty() ? "name" : "factory (create)");
    std::abort();
  }
  std::vector<OperatorType>& t = Table();
  auto at = std::lower_bound(t.begin(), t.end(), type.name,
                             [](const OperatorType& a, const std::string& name) { return a.name < name; });
  if (at != t.end() && at->name == type.name) {
    fprintf(stderr, "cairn: operator type '%s' is registered twice\n", type.name.c_str());
    std::abort();
  }
  t.insert(at, std::move(type));
  return true;
}

const std::vector<OperatorType>& OperatorTypes() { return Table(); }

const OperatorType* FindOperatorType(std::string_view name) {
  const std::vector<OperatorType>& t = Table();
  auto at = std::lower_bound(t.begin(), t.end(), name, [](const OperatorType& a, std::string_view n) { return a.name < n; });
  return at != t.end() && at->name == name ? &*at : nullptr;
}

}  // namespace cairn

// The `select` of map and join: output field name -> expression, compiled over the records the
// operator reads (engine/expr/expr.h). One function, so that both check it alike at load and Open.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/expr/expr.h"
#include "jobs/job_spec.h"

namespace cairn {

// Compiles every entry of `c`'s `select` over `input` into *out, in YAML order, and the output
// fields (name, the expression's type) into *fields. InvalidArgument at the entry's YAML place:
// no entries, an expression that does not compile, or an untyped NULL.
inline Status CompileSelect(const OperatorConfig& c, const SchemaRef& input, std::unique_ptr<ExprProgram>* out,
                            std::vector<Field>* fields) {
  const std::vector<ParamEntry>& entries = c.GetEntries("select");
  if (entries.empty())
    return Status::InvalidArgument(c.Where("select") + ": operator '" + c.id + "': select must name at least one field");
  auto p = std::make_unique<ExprProgram>(input);
  fields->clear();
  for (const ParamEntry& e : entries) {
    const std::string place = e.location + ": operator '" + c.id + "': select." + e.key;
    CAIRN_RETURN_IF_ERROR(p->Add(e.value, place));
    const ExprType t = p->type(p->size() - 1);
    if (t.null_literal)
      return Status::InvalidArgument(place + ", column 1: the type of NULL is unknown here; write CAST(NULL AS type)");
    fields->push_back({e.key, t.type});
  }
  *out = std::move(p);
  return Status::OK();
}

}  // namespace cairn

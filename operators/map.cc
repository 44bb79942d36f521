// map: emits one record per input record, whose fields are the entries of `select` in YAML
// order, each the value of its expression (engine/expr/expr.h) over the input record. The
// expressions are compiled against the input schema when the job loads (errors name the entry's
// YAML place and the column in the expression) and again at Open, and evaluated a batch at a
// time; the output rows are then filled column by column.
#include <memory>
#include <vector>

#include "engine/expr/expr.h"
#include "jobs/registry.h"
#include "operators/select_exprs.h"

namespace cairn {
namespace {

class Map final : public Operator {
 public:
  explicit Map(const OperatorConfig& c) : config_(c) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.input_schemas.empty() || ctx.input_schemas[0] == nullptr)
      return Status::Internal("map " + ctx.operator_id + " has no input schema");
    return CompileSelect(config_, ctx.input_schemas[0], &program_, &fields_);
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    const size_t n = in.size();
    if (n == 0) return Status::OK();
    program_->Evaluate(in);
    const size_t first = out->size();
    for (size_t k = 0; k < n; ++k) out->AddRow();
    for (size_t f = 0; f < fields_.size(); ++f) WriteColumn(program_->result(f), fields_[f].type, n, out, first, f);
    return Status::OK();
  }

 private:
  const OperatorConfig config_;
  std::unique_ptr<ExprProgram> program_;
  std::vector<Field> fields_;
};

// The select entries in YAML order, each of its expression's type.
Status MapSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  SchemaRef in;
  CAIRN_RETURN_IF_ERROR(CommonInputSchema(c, inputs, "evaluates one select over all its inputs", &in));
  std::unique_ptr<ExprProgram> p;
  std::vector<Field> fields;
  CAIRN_RETURN_IF_ERROR(CompileSelect(c, in, &p, &fields));
  Status s = Schema::Make(std::move(fields), out);
  if (!s.ok()) return Status::InvalidArgument(c.Where("select") + ": operator '" + c.id + "': " + s.message());
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "map",
    .role = OperatorRole::kTransform,
    .output_schema = MapSchema,
    .params = {{.name = "select",
                .type = ParamType::kMap,
                .required = true,
                .doc = "output field name -> [expression](#expressions) over the input's fields, e.g. "
                       "`{user: \"lower(user)\", kb: \"bytes / 1024.0\"}`; the output has these fields in this order, "
                       "each of its expression's type"}},
    .doc = "Emits one record per input record, made of the `select` entries. The expressions are type-checked when "
           "the job loads and evaluated a batch at a time.",
    .create = MakeOperator<Map>,
});

}  // namespace cairn

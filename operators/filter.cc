// filter: passes on the records for which its `where` expression (engine/expr/expr.h) is TRUE;
// FALSE and NULL drop the record. The expression is compiled against the input schema when the
// job loads (errors name the YAML place and the column in the expression) and again at Open,
// and evaluated a batch at a time.
#include <memory>
#include <vector>

#include "engine/expr/expr.h"
#include "jobs/registry.h"

namespace cairn {
namespace {

std::string WherePlace(const OperatorConfig& c) { return c.Where("where") + ": operator '" + c.id + "': where"; }

// Compiles `where` over `input`; InvalidArgument unless it is a bool expression.
Status CompileWhere(const OperatorConfig& c, const SchemaRef& input, std::unique_ptr<ExprProgram>* out) {
  auto p = std::make_unique<ExprProgram>(input);
  CAIRN_RETURN_IF_ERROR(p->Add(c.GetString("where"), WherePlace(c)));
  const ExprType t = p->type(0);
  if (!t.null_literal && t.type != FieldType::kBool)
    return Status::InvalidArgument(WherePlace(c) + ", column 1: where must be a bool expression (a condition), got " +
                                   t.ToString());
  *out = std::move(p);
  return Status::OK();
}

class Filter final : public Operator {
 public:
  explicit Filter(const OperatorConfig& c) : config_(c) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.input_schemas.empty() || ctx.input_schemas[0] == nullptr)
      return Status::Internal("filter " + ctx.operator_id + " has no input schema");
    return CompileWhere(config_, ctx.input_schemas[0], &program_);
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    if (in.empty()) return Status::OK();
    program_->Evaluate(in);
    rows_.clear();
    SelectTrue(program_->result(0), in.size(), &rows_);
    for (uint32_t r : rows_) out->AddFrom(in, r);
    return Status::OK();
  }

 private:
  const OperatorConfig config_;
  std::unique_ptr<ExprProgram> program_;
  std::vector<uint32_t> rows_;
};

// What it reads (all inputs alike), once `where` type-checks against it.
Status FilterSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  SchemaRef in;
  CAIRN_RETURN_IF_ERROR(CommonInputSchema(c, inputs, "emits what it reads", &in));
  std::unique_ptr<ExprProgram> p;
  CAIRN_RETURN_IF_ERROR(CompileWhere(c, in, &p));
  *out = in;
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "filter",
    .role = OperatorRole::kTransform,
    .output_schema = FilterSchema,
    .params = {{.name = "where",
                .type = ParamType::kString,
                .required = true,
                .doc = "a bool [expression](#expressions) over the input's fields; records for which it is TRUE "
                       "pass, FALSE and NULL drop them"}},
    .doc = "Passes on the records for which `where` is TRUE; its output schema is its input's. The expression is "
           "type-checked when the job loads and evaluated a batch at a time.",
    .create = MakeOperator<Filter>,
});

}  // namespace cairn

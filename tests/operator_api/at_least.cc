// at_least: passes on the records whose int64 field `field` is at least `min`.
#include "jobs/registry.h"

namespace cairn {
namespace {

class AtLeast final : public Operator {
 public:
  explicit AtLeast(const OperatorConfig& config) : name_(config.GetString("field")), min_(config.GetInt("min")) {}

  Status Open(OperatorContext& ctx) override {
    field_ = ctx.input_schemas[0]->IndexOf(name_);
    if (field_ < 0) return Status::InvalidArgument("at_least " + ctx.operator_id + ": no field '" + name_ + "'");
    return Status::OK();
  }
  Status Process(int input, const RecordBatch& in, RecordBatch* out) override {
    for (size_t i = 0; i < in.size(); ++i)
      if (in.GetInt64(i, static_cast<size_t>(field_)) >= min_) out->AddFrom(in, i);
    return Status::OK();
  }

 private:
  const std::string name_;
  const int64_t min_;
  int field_ = -1;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "at_least",
    .role = OperatorRole::kTransform,
    .params = {{.name = "field", .required = true, .doc = "the int64 field compared"},
               {.name = "min", .type = ParamType::kInt, .required = true, .doc = "smallest value passed on"}},
    .doc = "Passes on the records whose field `field` is at least `min`.",
    .create = MakeOperator<AtLeast>,
});

}  // namespace cairn

// at_least: passes on the records whose value is at least `min`.
#include "jobs/registry.h"

namespace cairn {
namespace {

class AtLeast final : public Operator {
 public:
  explicit AtLeast(const OperatorConfig& config) : min_(config.GetInt("min")) {}

  Status Process(int input, const RecordBatch& in, RecordBatch* out) override {
    for (size_t i = 0; i < in.size(); ++i)
      if (in.a(i) >= min_) out->Add(in.key(i), in.a(i), in.b(i));
    return Status::OK();
  }

 private:
  const int64_t min_;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "at_least",
    .role = OperatorRole::kTransform,
    .output = Schema{"", "", ""},  // all empty: the schema of its input
    .params = {{.name = "min", .type = ParamType::kInt, .required = true, .doc = "smallest value passed on"}},
    .doc = "Passes on the records whose value is at least `min`.",
    .create = MakeOperator<AtLeast>,
});

}  // namespace cairn

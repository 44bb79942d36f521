// throttle: passes records through unchanged, admitting at most `rate` records per second per
// subtask. It heads its own chain, so the task processes input only as fast as it admits, the
// input channels fill up, and backpressure reaches the sources.
#include "engine/dataflow/operator_capabilities.h"
#include "jobs/registry.h"
#include "operators/rate_limiter.h"

namespace cairn {
namespace {

class Throttle final : public Operator, public FlowControlled {
 public:
  explicit Throttle(const OperatorConfig& c) : limiter_(c.GetInt("rate")) {}
  size_t Admit(size_t want, Clock::time_point* resume_at) override {
    size_t n = limiter_.Allowed(want, resume_at);
    limiter_.Consumed(n);
    return n;
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    out->AppendRange(in, 0, in.size());
    return Status::OK();
  }

 private:
  RateLimiter limiter_;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "throttle",
    .role = OperatorRole::kTransform,
    .params = {{.name = "rate", .type = ParamType::kInt, .required = true, .min_int = 1,
                .doc = "records per second per subtask"}},
    .doc = "Passes records through at most `rate` records per second per subtask, so that a "
           "job can be put under backpressure on purpose. It always starts its own chain, "
           "and its schema is its input's.",
    .create = MakeOperator<Throttle>,
    .chain_head = true,
});

}  // namespace cairn

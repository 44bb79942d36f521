// discard_sink: counts and drops its input, so that a benchmark measures the job without the
// cost of writing output.
#include "jobs/registry.h"

namespace cairn {
namespace {

class DiscardSink final : public Operator {
 public:
  Status Process(int, const RecordBatch& in, RecordBatch*) override {
    records_ += in.size();
    return Status::OK();
  }

 private:
  uint64_t records_ = 0;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "discard_sink",
    .role = OperatorRole::kSink,
    .doc = "Counts and drops its input (for benchmarks).",
    .create = MakeOperator<DiscardSink>,
});

}  // namespace cairn

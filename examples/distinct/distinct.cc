// distinct: a keyed operator of one's own. It passes on the first record of every key and
// drops the others, remembering the keys it has seen in a ValueState<bool> that Cairn
// checkpoints, restores after a crash and redistributes when the parallelism changes.
#include <cairn/cairn.h>

#include <string>

namespace {

class Distinct final : public cairn::Operator {
 public:
  explicit Distinct(const cairn::OperatorConfig& config) : key_by_(config.key_by) {}

  cairn::Status Open(cairn::OperatorContext& ctx) override {
    // Every key field is in the input: the job loader checked key_by against it.
    CAIRN_RETURN_IF_ERROR(cairn::KeySelector::Make(*ctx.input_schemas[0], key_by_, &key_));
    return ctx.keyed->GetValueState("seen", &seen_);
  }

  cairn::Status Process(int, const cairn::RecordBatch& in, cairn::RecordBatch* out) override {
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view key = key_.Key(in, i, &scratch_);
      bool seen = false;
      if (seen_->Get(key, &seen)) continue;
      seen_->Put(key, true);
      out->AddFrom(in, i);
    }
    return cairn::Status::OK();
  }

 private:
  const std::vector<std::string> key_by_;
  cairn::KeySelector key_;
  cairn::ValueState<bool>* seen_ = nullptr;
  std::string scratch_;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "distinct",
    .role = cairn::OperatorRole::kTransform,
    .keyed = true,
    .doc = "Keyed by its key_by fields: passes on the first record of every key, drops the others.",
    .create = cairn::MakeOperator<Distinct>,
});

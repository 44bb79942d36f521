// count: keyed by word; emits (word, running count) for every input word. The counts are the
// default keyed state (ValueState<int64_t> ""), which the framework checkpoints and restores;
// on the heap backend the operator updates its KeyedInt64State table directly (the fast path),
// on the RocksDB backend it goes through the ValueState.
#include <algorithm>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/dataflow/operator_capabilities.h"
#include "jobs/registry.h"
#include "state/keyed_state.h"
#include "state/keyed_state_api.h"

namespace cairn {
namespace {

class Count final : public Operator, public KeyedSummary {
 public:
  Status Open(OperatorContext& ctx) override {
    state_ = ctx.keyed_state;
    if (state_ != nullptr) return Status::OK();
    if (ctx.keyed == nullptr) return Status::Internal("count operator " + ctx.operator_id + " has no keyed state");
    return ctx.keyed->GetValueState(kDefaultStateName, &counts_);
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    // Hash the batch first, then update with the slots (distance 16) and keys (distance 8)
    // of later records already on their way to the cache: the table is larger than the cache,
    // and a miss per lookup is what limits this loop.
    const size_t n = in.size();
    hashes_.resize(n);
    for (size_t i = 0; i < n; ++i) hashes_[i] = KeyHash(in.key(i));
    if (state_ == nullptr) {
      for (size_t i = 0; i < n; ++i) {
        std::string_view w = in.key(i);
        int64_t c = 0;
        if (!counts_->Get(w, hashes_[i], &c)) c = 0;
        counts_->Put(w, hashes_[i], ++c);
        out->Add(w, c);
      }
      return Status::OK();
    }
    for (size_t i = 0; i < n; ++i) {
      if (i + 16 < n) state_->PrefetchSlot(hashes_[i + 16]);
      if (i + 8 < n) state_->PrefetchKey(hashes_[i + 8]);
      std::string_view w = in.key(i);
      out->Add(w, state_->AddHashed(w, hashes_[i], 1));
    }
    return Status::OK();
  }
  void TopKeys(size_t k, std::vector<std::pair<std::string, int64_t>>* out) const override {
    std::vector<std::pair<int64_t, std::string_view>> all;
    std::vector<std::string> copies;  // RocksDB: the keys outlive the scan
    if (state_ != nullptr) {
      all.reserve(state_->size());
      state_->ForEach([&](std::string_view key, int64_t v) { all.emplace_back(v, key); });
    } else {
      std::vector<std::pair<int64_t, std::string>> best;  // the k largest, kept small
      counts_->ForEach([&](std::string_view key, const int64_t& v) {
        best.emplace_back(v, std::string(key));
        if (best.size() >= 4 * k + 64) Trim(&best, k);
      });
      Trim(&best, k);
      copies.reserve(best.size());
      for (auto& [v, key] : best) {
        copies.push_back(std::move(key));
        all.emplace_back(v, copies.back());
      }
    }
    size_t n = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + n, all.end(),
                      [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
    for (size_t i = 0; i < n; ++i) out->emplace_back(std::string(all[i].second), all[i].first);
  }

 private:
  // Keeps the k entries with the largest values (ties: smallest key).
  static void Trim(std::vector<std::pair<int64_t, std::string>>* v, size_t k) {
    size_t n = std::min(k, v->size());
    std::partial_sort(v->begin(), v->begin() + n, v->end(),
                      [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
    v->resize(n);
  }

  KeyedInt64State* state_ = nullptr;     // heap backend: the fast path
  ValueState<int64_t>* counts_ = nullptr;  // otherwise
  std::vector<uint64_t> hashes_;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "count",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .output = Schema{"word", "count", ""},
    .doc = "Keyed by word: for every input word emits (word, running count). The counts "
           "are keyed state, checkpointed to RocksDB by key group.",
    .create = MakeOperator<Count>,
});

}  // namespace cairn

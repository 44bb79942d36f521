// count: keyed by its key_by fields; emits (key fields, running count) for every input record.
// The counts are the default keyed state (ValueState<int64_t> ""), which the framework
// checkpoints and restores; on the heap backend the operator updates its KeyedInt64State table
// directly (the fast path), on the RocksDB backend it goes through the ValueState.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/dataflow/record_codec.h"
#include "engine/dataflow/operator_capabilities.h"
#include "jobs/registry.h"
#include "state/keyed_state.h"
#include "state/keyed_state_api.h"

namespace cairn {
namespace {

class Count final : public Operator, public KeyedSummary {
 public:
  explicit Count(const OperatorConfig& c) : key_by_(c.key_by) {}
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
    if (in.schema() != key_schema_) {  // inputs may differ in their other fields
      CAIRN_RETURN_IF_ERROR(KeySelector::Make(*in.schema(), key_by_, &key_));
      key_schema_ = in.schema();
    }
    const std::vector<int>& key_at = key_.fields();
    const size_t n = in.size();
    const size_t nk = key_at.size();
    hashes_.resize(n);
    const bool carried = in.HasKeyHashes(key_at);
    if (state_ == nullptr) {  // the RocksDB backend
      for (size_t i = 0; i < n; ++i) {
        std::string_view key = key_.Key(in, i, &scratch_);
        uint64_t hash = carried ? in.key_hash(i) : KeyHash(key);
        int64_t c = 0;
        if (!counts_->Get(key, hash, &c)) c = 0;
        counts_->Put(key, hash, ++c);
        Emit(in, i, c, out);
      }
      return Status::OK();
    }
    // The hash edge sends the key hashes along (RecordBatch::HasKeyHashes); batches without
    // them (e.g. restored in-flight records) are hashed here.
    const uint64_t* hashes = hashes_.data();
    if (carried) {
      hashes = in.key_hashes();
    } else if (key_.single_bytes()) {
      const size_t kf = static_cast<size_t>(key_at[0]);
      for (size_t i = 0; i < n; ++i) hashes_[i] = KeyHash(in.GetString(i, kf));
    } else {
      for (size_t i = 0; i < n; ++i) hashes_[i] = key_.Hash(in, i, &scratch_);
    }
    if (key_.single_bytes()) {  // the word count: the key is the word itself
      const size_t kf = static_cast<size_t>(key_at[0]);
      for (size_t i = 0; i < n; ++i) {
        if (i + 16 < n) state_->PrefetchSlot(hashes[i + 16]);
        if (i + 8 < n) state_->PrefetchKey(hashes[i + 8]);
        std::string_view w = in.GetString(i, kf);
        int64_t count = state_->AddHashed(w, hashes[i], 1);
        RecordBatch::RowWriter row = out->AppendRow();  // (word, count); a null word stays null
        if (!in.IsNull(i, kf)) row.SetString(0, w);
        row.SetInt64(1, count);
      }
      return Status::OK();
    }
    for (size_t i = 0; i < n; ++i) {
      if (i + 16 < n) state_->PrefetchSlot(hashes[i + 16]);
      if (i + 8 < n) state_->PrefetchKey(hashes[i + 8]);
      int64_t count = state_->AddHashed(key_.Key(in, i, &scratch_), hashes[i], 1);
      size_t r = out->AddRow();
      for (size_t k = 0; k < nk; ++k) out->CopyFieldFrom(in, i, static_cast<size_t>(key_at[k]), r, k);
      out->SetInt64(r, nk, count);
    }
    return Status::OK();
  }
  // One pass over the keys, keeping at most a few dozen candidates: a candidate below the k-th
  // largest value seen so far is not kept (nor, on RocksDB, copied out of the scan).
  void TopKeys(size_t k, std::vector<std::pair<std::string, int64_t>>* out) const override {
    if (k == 0) return;
    if (state_ != nullptr) {  // the keys stay in the table's arena: views are enough
      TopK<std::string_view> top(k);
      state_->ForEach([&](std::string_view key, int64_t v) {
        if (top.Wants(v)) top.Add(v, key);
      });
      for (auto& [v, key] : top.Take()) out->emplace_back(std::string(key), v);
    } else {  // the RocksDB scan's keys do not outlive the callback
      TopK<std::string> top(k);
      counts_->ForEach([&](std::string_view key, const int64_t& v) {
        if (top.Wants(v)) top.Add(v, std::string(key));
      });
      for (auto& [v, key] : top.Take()) out->emplace_back(std::move(key), v);
    }
  }

 private:
  // Appends (key fields of row i of `in`, count).
  void Emit(const RecordBatch& in, size_t i, int64_t count, RecordBatch* out) {
    const std::vector<int>& key_at = key_.fields();
    size_t r = out->AddRow();
    for (size_t k = 0; k < key_at.size(); ++k) out->CopyFieldFrom(in, i, static_cast<size_t>(key_at[k]), r, k);
    out->SetInt64(r, key_at.size(), count);
  }
  // The k entries with the largest values (ties: the smallest key), from entries offered one
  // at a time. Candidates collect up to 4k + 64 and are then cut to the k best, whose last
  // value becomes the floor: an entry below it can no longer make the k best (one equal to it
  // still can, by its key).
  template <typename Key>
  class TopK {
   public:
    explicit TopK(size_t k) : k_(k), limit_(4 * k + 64) { best_.reserve(limit_); }
    bool Wants(int64_t v) const { return !full_ || v >= floor_; }
    void Add(int64_t v, Key key) {
      best_.emplace_back(v, std::move(key));
      if (best_.size() == limit_) Trim();
    }
    // The k best, largest first.
    std::vector<std::pair<int64_t, Key>> Take() {
      Trim();
      return std::move(best_);
    }

   private:
    void Trim() {
      const size_t n = std::min(k_, best_.size());
      std::partial_sort(best_.begin(), best_.begin() + static_cast<std::ptrdiff_t>(n), best_.end(),
                        [](const auto& x, const auto& y) { return RanksBefore(x.first, x.second, y.first, y.second); });
      best_.resize(n);
      if (n == k_) {
        full_ = true;
        floor_ = best_.back().first;
      }
    }
    const size_t k_, limit_;
    std::vector<std::pair<int64_t, Key>> best_;
    bool full_ = false;
    int64_t floor_ = 0;
  };

  const std::vector<std::string> key_by_;
  KeySelector key_;     // of records of key_schema_
  SchemaRef key_schema_;
  KeyedInt64State* state_ = nullptr;     // heap backend: the fast path
  ValueState<int64_t>* counts_ = nullptr;  // otherwise
  std::vector<uint64_t> hashes_;
  std::string scratch_;
};

// (key fields, count int64).
Status CountSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  for (const SchemaRef& in : inputs) {
    if (in == nullptr) continue;
    std::vector<Field> fields;
    for (const std::string& k : c.key_by) fields.push_back(in->field(static_cast<size_t>(in->IndexOf(k))));
    if (std::find(c.key_by.begin(), c.key_by.end(), "count") != c.key_by.end())
      return Status::InvalidArgument(c.Where("key_by") + ": operator '" + c.id +
                                     "' (type count) emits a field 'count', so it cannot be keyed by 'count'");
    fields.push_back({"count", FieldType::kInt64});
    *out = MakeSchema(std::move(fields));
    return Status::OK();
  }
  return Status::InvalidArgument(c.location + ": operator '" + c.id + "' has no input whose schema is known");
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "count",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .output_schema = CountSchema,
    .doc = "Keyed by its key_by fields: for every input record emits the key fields and the running "
           "count of the key (field `count`, int64). The counts are keyed state, checkpointed by key group.",
    .create = MakeOperator<Count>,
});

}  // namespace cairn

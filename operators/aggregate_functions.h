// Aggregate functions shared by `aggregate` and `window`: the `aggregates` parameter parsed
// against the input schema (count(*), count(x), sum(x), min(x), max(x), avg(x)), and the
// accumulators of one key (or one window of a key): add a record, merge another accumulator
// (session windows), write the results into a record, and the bytes kept in keyed state.
//
// Stored bytes (the value of `aggregate`'s "acc" state and of `window`'s windows), per
// aggregate: seen (1 byte), the cell (8: count, int64 sum/min/max, double bits), for avg also
// the count (8); for a string min/max its bytes (length-prefixed) instead of the cell.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "engine/dataflow/record_batch.h"
#include "jobs/job_spec.h"

namespace cairn {

enum class AggregateFn { kCountStar, kCount, kSum, kMin, kMax, kAvg };

struct AggregateSpec {
  std::string name;  // the output field
  AggregateFn fn = AggregateFn::kCountStar;
  int field = -1;    // input field (not for count(*))
  FieldType in = FieldType::kInt64;
  FieldType out = FieldType::kInt64;
};

// Parses every entry of `c`'s `aggregates` against `input`. InvalidArgument at the entry's place
// for an unknown function, a missing field, a type that does not fit, a name in `reserved`
// (the key fields, and for `window` its window_start and window_end), or no aggregates at all.
Status ParseAggregates(const OperatorConfig& c, const Schema& input, const std::vector<std::string>& reserved,
                       std::vector<AggregateSpec>* out);

// The accumulators of one group, for the specs they were made with (which must outlive them).
class AggregateAccumulators {
 public:
  AggregateAccumulators() = default;
  explicit AggregateAccumulators(const std::vector<AggregateSpec>* specs) : specs_(specs), accs_(specs->size()) {}
  // Empty: as before the first record.
  void Reset();
  void Add(const RecordBatch& in, size_t row);
  // Adds what `other` accumulated (the same specs).
  void Merge(const AggregateAccumulators& other);
  // The results into fields first_field, first_field + 1, ... of row `row` of `out`.
  void Write(RecordBatch* out, size_t row, size_t first_field) const;
  void Encode(std::string* out) const;
  // False when `bytes` are not accumulators of these specs.
  bool Decode(std::string_view bytes);

 private:
  // One aggregate's accumulator: `seen` (a non-null value arrived), the value (count, sum, min
  // or max; a string's bytes in `s`) and, for avg, a double sum with the count in `n`.
  struct Acc {
    bool seen = false;
    uint64_t cell = 0;
    int64_t n = 0;
    std::string s;
  };
  bool StoresString(size_t k) const;

  const std::vector<AggregateSpec>* specs_ = nullptr;
  std::vector<Acc> accs_;
};

}  // namespace cairn

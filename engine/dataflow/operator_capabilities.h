// Operator capabilities are interfaces that an Operator may also derive from, to take part in
// something only some operators need; an operator that does not derive from one never hears of
// it.
//
// Contract: the task and the runner look for a capability once per operator instance
// (dynamic_cast, when the task is built or the job ends), never per record, and call it on the
// task thread under the Operator contract (engine/dataflow/operator.h), except where a method
// says otherwise.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn {

// FlowControlled is an operator that paces its task (a throttle): the task processes an input
// batch only as far as the head of its chain admits, so the input channels fill up and
// backpressure reaches the producers.
//
// Contract: asked only of the operator that heads a chain, before every (part of an) input
// batch; register the type with chain_head = true, so that it always heads its own chain.
// While it admits nothing the task still takes checkpoints and handles priority events.
class FlowControlled {
 public:
  virtual ~FlowControlled() = default;
  // How many of the next `want` input records may be processed now (at most `want`). 0 means
  // none before *resume_at, which it then sets.
  virtual size_t Admit(size_t want, std::chrono::steady_clock::time_point* resume_at) = 0;
};

// KeyedSummary is a keyed operator that can name its largest keys, for the summary `cairn run`
// prints at the end of a job ("top words").
//
// Contract: called by the runner after the job ended successfully (after Finish, the task
// threads joined), never concurrently with another call on the operator.
class KeyedSummary {
 public:
  virtual ~KeyedSummary() = default;
  // Appends to *out up to `k` keys of this subtask's state with the largest values, largest
  // first (ties by key).
  virtual void TopKeys(size_t k, std::vector<std::pair<std::string, int64_t>>* out) const = 0;
};

// The summary's ranking of keys: the larger value first, equal values by the smaller key. Every
// list of top keys (an operator's, a process's, a cluster's) is ordered by it.
inline bool RanksBefore(int64_t value_a, std::string_view key_a, int64_t value_b, std::string_view key_b) {
  return value_a != value_b ? value_a > value_b : key_a < key_b;
}

// Orders *keys by RanksBefore and keeps the first k: the top keys of several subtasks' lists.
inline void KeepTopKeys(size_t k, std::vector<std::pair<std::string, int64_t>>* keys) {
  std::sort(keys->begin(), keys->end(),
            [](const auto& a, const auto& b) { return RanksBefore(a.second, a.first, b.second, b.first); });
  if (keys->size() > k) keys->resize(k);
}

// SkippedRecords is an operator that may drop malformed input records rather than fail (a
// file_source with on_error: skip), and counts them, for the summary `cairn run` prints and the
// checkpoint statistics (`records_skipped` in _metadata, docs/checkpoints.md). The count is part
// of the operator's checkpointed state, so after a restore it includes the records skipped
// before the checkpoint.
//
// Contract: called by the task on its thread right after the operator's SnapshotState, and by
// the runner after the job ended (the task threads joined); never concurrently with another
// call on the operator.
class SkippedRecords {
 public:
  virtual ~SkippedRecords() = default;
  // Whether it skips malformed records at all (else it fails on them and the count stays 0).
  virtual bool counts_skipped() const = 0;
  // Malformed records skipped by this subtask, since the job first started.
  virtual uint64_t records_skipped() const = 0;
};

// LateRecords is an operator that drops records arriving after the watermark passed the end
// of their event-time windows (window), and counts them, for the summary `cairn run` prints
// and the checkpoint statistics (`records_late` in _metadata, docs/checkpoints.md). The count
// is checkpointed, so after a restore it includes the records dropped before the checkpoint.
//
// Contract: as SkippedRecords.
class LateRecords {
 public:
  virtual ~LateRecords() = default;
  // Late records dropped by this subtask, since the job first started.
  virtual uint64_t records_late() const = 0;
};

// SplitSource is a source whose records come from several splits (a Kafka topic's partitions)
// that each advance in event time on their own. With `watermark:` the task then keeps one
// watermark per split and emits their minimum, leaving out splits idle for idle_timeout
// (Flink's per-split watermarks): a split behind the others holds the watermark back, so its
// records are not late, and an idle one does not (engine/runtime/source_watermarks.h).
//
// Contract: split_field is asked once, after Open; ActiveSplits after each Poll.
class SplitSource {
 public:
  virtual ~SplitSource() = default;
  // The index of the int64 field (of the records it emits) that names each record's split.
  virtual int split_field() const = 0;
  // Sets *out to the splits this subtask reads now: each holds the watermark back until it has
  // records or goes idle; a split no longer listed (read to its end) no longer counts.
  virtual void ActiveSplits(std::vector<int64_t>* out) const = 0;
};

}  // namespace cairn

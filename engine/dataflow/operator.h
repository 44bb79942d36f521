// Operator is the user-facing unit of computation: one instance per subtask, driven by its
// task's thread, with record batches in and record batches out.
//
// Contract (in this order; every call but Open on the owning task thread, Open before it starts):
//   Open(ctx)                      once; restored state (if any) is in ctx.
//   Process(input, in, out)*       for every batch; append results to `out`.
//   ProcessWatermark(wm, out)      when the input watermark advanced (the minimum over the
//                                  inputs that are not idle), after the operator's due event-time
//                                  timers fired; what it emits flows on before the watermark.
//   OnTimer(domain, ts, key, out)  a timer of the operator's TimerService fired (ctx.timers).
//   SnapshotState(id, snap)        the synchronous part of checkpoint `id`, between batches;
//                                  fill snap->operator_state and, for work that may run while
//                                  the task continues (fsync, upload), snap->async_part, which
//                                  runs on a persister thread and must not touch data the task
//                                  thread mutates.
//   NotifyCheckpointComplete(id)   after checkpoint `id` committed (every id <= `id` is
//                                  final; notifications may skip ids).
//   Finish(out)                    once, after every input ended: emit what remains.
//   Close()                        once, also after a failure.
// Errors are returned when they happen, never kept for a later call. An error from Process,
// NotifyCheckpointComplete or Finish fails the job with that status, its message prefixed with
// the task and "operator <id>[<subtask>]"; one from Open or Close fails the job as it is (name
// the operator in it). After a failure the operator is only closed. An error from SnapshotState
// (or its async part) declines that checkpoint only (checkpoint.tolerable_failures) and the
// task goes on: the operator must then still work, or keep failing.
// Keyed operators declare named states (ValueState, MapState, ListState, state/keyed_state_api.h)
// in Open through ctx.keyed; the framework snapshots and restores them. ctx.keyed_state is the
// heap backend's fast int64 table behind the default state (null with `state.backend: rocksdb`).
// Any operator may keep list state that is not per key (OperatorListState, split or union on
// rescale, state/operator_list_state.h) through ctx.operator_state: declared in Open, restored
// before it, stored by every checkpoint. OperatorSnapshot::operator_state is the operator's own
// bytes beside it (its type's registered OperatorStateRule says how they rescale).
// Event time: the framework forwards the input watermark downstream after ProcessWatermark
// returned (and after what it emitted). An operator whose type registers `timers` gets
// ctx.timers (engine/dataflow/timer_service.h), per-key event- and processing-time timers kept
// in its keyed state; OnTimer is called for each due timer, in timestamp order.
// Capabilities that only some operators have are separate interfaces an operator may also
// derive from (engine/dataflow/operator_capabilities.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/dataflow/record_batch.h"
#include "engine/base/status.h"
#include "engine/dataflow/stream_element.h"
#include "engine/dataflow/timer_service.h"

namespace cairn {

class KeyedInt64State;
class KeyedStateBackend;
class OperatorStateStore;

struct OperatorContext {
  std::string operator_id;
  std::string operator_type;                         // its `type:` (recorded in checkpoints)
  std::string job_name;
  uint32_t subtask = 0;
  uint32_t parallelism = 1;
  uint32_t max_parallelism = 128;
  KeyGroupRange key_groups;                          // of this subtask
  std::vector<SchemaRef> input_schemas;              // what each input carries (sources: none)
  SchemaRef output_schema;                           // what it emits (null for sinks)
  KeyedStateBackend* keyed = nullptr;                // set for keyed operators only: every state kind
  KeyedInt64State* keyed_state = nullptr;            // heap backend only: the default state's table
  OperatorStateStore* operator_state = nullptr;      // every operator: its list states, restored before Open
  TimerService* timers = nullptr;                    // types that register `timers` only
  std::optional<CheckpointId> restored_checkpoint;   // the checkpoint restored from, if any
  std::optional<std::string> restored_operator_state;  // this subtask's bytes from it, if any
};

struct OperatorSnapshot {
  std::string operator_state;          // stored in the checkpoint, handed back on restore
  std::function<Status()> async_part;  // optional; runs before the subtask acknowledges
};

class Operator {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~Operator() = default;
  virtual Status Open(OperatorContext& ctx) { return Status::OK(); }
  virtual Status Process(int input, const RecordBatch& in, RecordBatch* out) { return Status::OK(); }
  virtual Status SnapshotState(CheckpointId id, OperatorSnapshot* snap) { return Status::OK(); }
  // The input watermark advanced to `watermark` (kMaxWatermark: every input ended). Default:
  // nothing (the framework forwards it).
  virtual Status ProcessWatermark(int64_t watermark, RecordBatch* out) { return Status::OK(); }
  // A timer of ctx.timers fired: `timestamp` in `domain`, for `key` (the bytes it was registered
  // with). It may register further timers.
  virtual Status OnTimer(TimeDomain domain, int64_t timestamp, std::string_view key, RecordBatch* out) {
    return Status::OK();
  }
  virtual Status NotifyCheckpointComplete(CheckpointId id) { return Status::OK(); }
  virtual Status Finish(RecordBatch* out) { return Status::OK(); }
  virtual Status Close() { return Status::OK(); }
};

// A source produces records from outside the dataflow. Its read position must be part of its
// operator state, so that a restore resumes exactly after the last record of the checkpoint.
// A source heads its chain and is polled instead of processing input.
class SourceOperator : public Operator {
 public:
  enum class PollResult {
    kMore,       // appended records (maybe none); call again
    kWait,       // nothing now (rate limit); call again at *resume_at
    kExhausted,  // bounded input fully read; Poll will not produce more
    kFailed,     // cannot go on (e.g. a malformed record); Close returns why, and the job fails with it
  };
  // Appends at most `max_records` records to `out`.
  virtual PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) = 0;
};

}  // namespace cairn

// Task is one subtask of an operator chain running on its own thread: it reads its InputGate
// (or polls its source), runs the chained operators on each batch, writes the OutputGate, and
// carries out its part of every checkpoint through its SubtaskCheckpointer (forward the barrier,
// snapshot the chain synchronously, hand the rest to the SnapshotPersister).
//
// Contract: all operator calls happen on the task thread, except Open, which the runner calls
// before the thread starts. Control messages (trigger, notify-complete, terminate) may be sent
// from any thread; they are handled between batches, in the order sent. A task ends after
// end of stream on all inputs (or Terminate, for a source) or when the job is cancelled.
#pragma once

#include <concurrentqueue/concurrentqueue.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_coordinator.h"
#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/checkpoint/checkpointed_input_gate.h"
#include "engine/checkpoint/subtask_checkpointer.h"
#include "engine/dataflow/operator.h"
#include "engine/dataflow/output_gate.h"
#include "engine/base/parker.h"
#include "engine/runtime/keyed_timer_service.h"
#include "engine/runtime/source_watermarks.h"
#include "state/keyed_state.h"
#include "state/operator_list_state.h"
#include "state/state_backend.h"

namespace cairn {

class FlowControlled;
class SkippedRecords;
class LateRecords;
class SnapshotPersister;

// What a task reports to the job: checkpoint-protocol events and failures.
class TaskListener {
 public:
  virtual ~TaskListener() = default;
  virtual void SourceFinished(int task) = 0;
  virtual void TaskFailed(int task, const Status& s) = 0;
};

// One operator of the chain, with its subtask's state.
struct ChainedOperator {
  std::unique_ptr<Operator> op;
  OperatorContext ctx;
  std::unique_ptr<KeyedInt64State> keyed_state;  // keyed operators on the heap backend only
  const SkippedRecords* skipped = nullptr;        // set by the task when op is one (its count goes in the checkpoint)
  const LateRecords* late = nullptr;              // the same, for late records
  std::unique_ptr<KeyedStore> keyed_store;       // keyed operators only
  std::unique_ptr<OperatorStateStore> list_state;  // every operator: its list states (ctx.operator_state)
  SourceWatermarks watermarks;                     // a source with `watermark:` only
  // Keyed operators only; declared last, destroyed first (it may point into the two above).
  std::unique_ptr<KeyedStateBackend> keyed_backend;
  // Types with timers only; it uses keyed_backend and list_state.
  std::unique_ptr<KeyedTimerService> timers;
};

class Task : public BlockedHandler, public CheckpointParticipant {
 public:
  using Clock = std::chrono::steady_clock;
  Task(int index, std::string name, std::vector<ChainedOperator> chain, uint32_t max_parallelism, std::string checkpoint_dir, SnapshotPersister* persister, TaskListener* listener);

  int index() const { return index_; }
  const std::string& name() const override { return name_; }
  bool is_source() const override { return source_ != nullptr; }
  OutputGate* output_gate() { return &out_; }
  CheckpointedInputGate* input_gate() { return &in_; }
  Parker* parker() { return &parker_; }
  std::vector<ChainedOperator>& chain() { return chain_; }

  // Records restored from a checkpoint's channel state, by channel name; they go through the
  // input gate ahead of any new data on their channel. Before Run.
  void SetRestoredChannelState(std::vector<RestoredChannel> state) {
    restored_channels_ = std::move(state);
  }
  // The thread body.
  void Run();
  // BlockedHandler: while blocked on a full output channel, take unaligned snapshots.
  bool OnBlocked(std::chrono::steady_clock::time_point* deadline) override;

  // Control, from any thread.
  void TriggerCheckpoint(const Barrier& b) override;      // sources only
  void NotifyCheckpointComplete(CheckpointId id) override;
  void Terminate() override;                              // sources only: send end of stream and stop
  void Drain() override;                                  // sources only: end the input now
  void Dump();                                   // print this task's state to stderr
  // Test-only failure injection (CAIRN_INJECT_FAILURE, docs/faults.md): a consumer task fails
  // once it has read `n` records (0: never). Before Run.
  void InjectFailureAfter(uint64_t n) { fail_after_ = n; }
  // Test-only slowness (CAIRN_SLOW_SUBTASK, docs/faults.md): the task sleeps `us` microseconds
  // before chain operator `op` processes a batch. Before Run.
  void SlowDownPerBatch(size_t op, int64_t us) {
    slow_op_ = op;
    slow_us_ = us;
  }
  void Cancel();

  // Statistics, from any thread (relaxed).
  uint64_t records_in() const { return records_in_.load(std::memory_order_relaxed); }
  uint64_t records_out() const { return records_out_.load(std::memory_order_relaxed); }
  uint64_t blocked_ns() const { return out_.blocked_ns(); }  // on full output channels
  // The last watermark this task sent downstream; kMinWatermark while none.
  int64_t watermark() const { return watermark_view_.load(std::memory_order_relaxed); }

 private:
  struct Control {
    enum class Kind { kTrigger, kNotify, kTerminate, kDump, kDrain } kind;
    Barrier barrier;
    CheckpointId id = 0;
  };
  void RunSource();
  void RunConsumer();
  bool HandleControl();  // false when the task must stop
  bool ProcessChain(size_t from, int input, const RecordBatch& in);
  void ResetBuffer(size_t i);
  // Process (part of) the current input batch, as far as the head operator admits. False when
  // the task must stop; *waiting set when the head admitted nothing until *resume_at.
  bool ProcessCurrent(bool* waiting, std::chrono::steady_clock::time_point* resume_at);
  bool HandleGateEvent(GateEvent& ev);
  // The synchronous snapshot of the chain, for the SubtaskCheckpointer.
  void SnapshotChain(const Barrier& b, PersistJob* job);
  bool LoadRestoredChannels();  // false (and failed) when a channel is not an input
  void PrintState();
  bool FinishChain(size_t from);
  // The watermark reached chain operator `from` and those after it: for each, its due timers
  // fire, then ProcessWatermark, what they emit flowing on; then it goes downstream. Never back.
  bool ProcessWatermarkChain(size_t from, int64_t watermark);
  // An idle watermark, or the end of idleness, for the channels downstream.
  bool ForwardIdle(bool idle);
  // Due processing-time timers of the chain fire. *next: the earliest one left (Unix ms).
  bool FireProcessingTimers(int64_t* next);
  // Emits what chain operator i put in its buffer through the rest of the chain.
  bool EmitFrom(size_t i);
  bool HandleWatermarkEvent(const Watermark& w);
  // The source task: watermarks after a batch it emitted; idleness; the park deadline.
  void NoteEventTimes(const RecordBatch& batch);
  bool EmitSourceWatermark();
  bool CheckSourceIdle();
  // Sends what the source watermarks say (the watermark if it passed the last one sent, then
  // idleness); nothing while the task is idle.
  bool ForwardSourceWatermark(const SourceWatermarkGenerator::Current& c);
  Clock::time_point ParkDeadline(Clock::time_point deadline);
  bool NotifyChain(CheckpointId id);  // false (and failed) when an operator fails
  // At the end of stream: waits (parked, handling control messages) until the latest checkpoint
  // this task took was notified complete. False when the task must stop (cancelled, failed).
  bool AwaitLastCheckpointNotified();
  // Fails the task with `s` from chain operator `c`, naming it; returns false.
  bool OperatorFailed(const ChainedOperator& c, const Status& s);
  void Fail(const Status& s);
  void CloseAll();

  // Constant after construction (Open is called on them before the thread starts).
  const int index_;
  const std::string name_;
  std::vector<ChainedOperator> chain_;
  SourceOperator* source_ = nullptr;        // chain head, when it is a source
  FlowControlled* flow_control_ = nullptr;  // chain head, when it paces the task's input
  TaskListener* const listener_;

  // Any thread: lock-free by construction.
  Parker parker_;
  moodycamel::ConcurrentQueue<Control> control_;
  std::atomic<bool> cancelled_{false};
  std::atomic<uint64_t> records_in_{0};
  std::atomic<uint64_t> records_out_{0};

  // Task thread only (Run and what it calls; before Run, the runner's thread sets them up).
  std::vector<RecordBatch> buffers_;  // output of each chained operator
  CheckpointedInputGate in_;
  OutputGate out_;
  SubtaskCheckpointer checkpointer_;
  CheckpointId last_notified_ = 0;  // the latest id NotifyChain passed on
  std::vector<Control> deferred_;  // control messages taken while blocked, handled later
  bool in_blocked_handler_ = false;
  // The input batch being processed (it may be processed in slices when throttled).
  GateEvent current_;
  bool has_current_ = false;
  size_t current_offset_ = 0;
  RecordBatch slice_;
  std::vector<RestoredChannel> restored_channels_;
  bool terminated_ = false;
  bool drain_requested_ = false;  // Drain() was handled: the source ends its input
  uint64_t fail_after_ = 0;       // InjectFailureAfter
  int64_t slow_us_ = 0;           // SlowDownPerBatch
  size_t slow_op_ = 0;
  bool failed_ = false;
  // Event time (task thread).
  int64_t out_watermark_ = kMinWatermark;  // the last watermark sent downstream
  std::atomic<int64_t> watermark_view_{kMinWatermark};  // out_watermark_, for observers
  bool out_idle_ = false;                  // an idle watermark was sent last
  SourceWatermarkGenerator watermarks_;    // a source with `watermark:`
  Clock::time_point batch_at_{};           // when NoteEventTimes saw the last batch
  bool has_timers_ = false;                // some chained operator has processing-time timers
};

}  // namespace cairn

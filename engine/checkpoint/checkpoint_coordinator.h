// CheckpointCoordinator triggers checkpoints, collects the tasks' acknowledgements, commits
// completed checkpoints, and decides when a bounded job may end.
//
// A checkpoint goes PendingCheckpoint -> (all tasks acknowledged) -> _metadata committed ->
// CompletedCheckpoint -> tasks notified -> retention applied. It fails (and its directory is
// removed) when a task declines, it times out, or its metadata cannot be written; more than
// checkpoint.tolerable_failures consecutive failures fail the job. A checkpoint triggered
// after every source reported its input finished is final: once it completes with no record in
// flight, the sources are told to end the stream; after checkpoint.max_drain_checkpoints final
// checkpoints that still found records in flight (a cycle that never drains), the job fails.
//
// Contract: Start() runs the coordinator on its own thread; Acknowledge/SourceFinished may be
// called from any thread. The JobListener hears of completion and failure.
#pragma once

#include <concurrentqueue/concurrentqueue.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/base/mutex.h"
#include "engine/base/parker.h"
#include "engine/checkpoint/checkpoint_config.h"
#include "state/checkpoint_store.h"

namespace cairn {

// What the coordinator sees of a task: runtime/task.h implements it. Calls come from the
// coordinator thread and must not block.
class CheckpointParticipant {
 public:
  virtual ~CheckpointParticipant() = default;
  virtual const std::string& name() const = 0;
  virtual bool is_source() const = 0;
  // Sources only: inject the barrier of a new checkpoint.
  virtual void TriggerCheckpoint(const Barrier& b) = 0;
  // Checkpoint `id` committed (every id <= `id` is final).
  virtual void NotifyCheckpointComplete(CheckpointId id) = 0;
  // Sources only: the final checkpoint completed; send end of stream and stop.
  virtual void Terminate() = 0;
};

// Why a checkpoint failed; every reason has a message for users.
enum class CheckpointFailureReason {
  kDeclined,             // a task could not snapshot or persist its state
  kTimeout,              // not complete within checkpoint.timeout
  kMetadataWriteFailed,  // the commit point could not be written
};
const char* CheckpointFailureMessage(CheckpointFailureReason r);

// Statistics of a run's checkpoints: totals over the run, and the durations of the latest
// completed ones only (checkpoint.history of them), so that a long run's statistics stay small.
struct CheckpointStats {
  uint64_t completed = 0;
  uint64_t failed = 0;
  int64_t last_duration_ms = -1;
  int64_t max_duration_ms = 0;
  int64_t total_duration_ms = 0;
  CheckpointId last_completed_id = 0;
  std::vector<int64_t> durations_ms;  // of the last `history` completed checkpoints, oldest first

  // Counts a completed checkpoint; keeps at most `history` (>= 1) durations.
  void RecordCompleted(CheckpointId id, int64_t duration_ms, size_t history);
};

class CheckpointCoordinator {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void JobFailed(const Status& s) = 0;
  };

  // `job_name` and `max_parallelism` go into every checkpoint's metadata.
  CheckpointCoordinator(std::string job_name, uint32_t max_parallelism, const CheckpointConfig& config,
                        const CheckpointStore* store, std::vector<CheckpointParticipant*> tasks, CheckpointId first_id,
                        Listener* listener);
  ~CheckpointCoordinator();

  // Told of every checkpoint that fails (declined, expired, metadata not written) or is
  // subsumed by a newer completed one, so that its queued writes are skipped (the snapshot
  // persister's Abort). Set before Start(); called on the coordinator thread.
  void SetAbortHandler(std::function<void(CheckpointId)> f) { abort_handler_ = std::move(f); }

  void Start();
  void Stop();

  void Acknowledge(TaskAck ack);
  void SourceFinished(int task);

  CheckpointStats stats() const EXCLUDES(stats_mu_);
  // The pending checkpoints and which tasks have answered, for diagnostics (any thread).
  std::string Describe() const EXCLUDES(describe_mu_);
  bool finished() const { return final_completed_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    CheckpointId id;
    Clock::time_point trigger;
    int64_t trigger_wall_ms;
    bool final_candidate;
    size_t acks = 0;
    std::vector<bool> acked;  // by task index
    // How it was taken: as triggered, or kAlignedThenUnaligned once any task switched it.
    SubtaskCheckpointMode mode = SubtaskCheckpointMode::kAligned;
    std::vector<SubtaskStateHandle> handles;
  };
  struct Event {
    enum class Kind { kAck, kSourceFinished } kind;
    TaskAck ack;
    int task = 0;
  };

  void Loop();
  void OnAck(TaskAck ack);
  void Trigger(bool final_candidate);
  void Complete(Pending p);
  void Fail(CheckpointId id, CheckpointFailureReason reason, const std::string& detail);
  // Tells the abort handler, then removes the checkpoint's directory, _metadata first.
  void Discard(CheckpointId id);

  // Constant after construction.
  const std::string job_name_;
  const uint32_t max_parallelism_;
  const CheckpointConfig config_;
  const CheckpointStore* const store_;
  const std::vector<CheckpointParticipant*> tasks_;
  std::vector<CheckpointParticipant*> sources_;
  Listener* const listener_;
  std::function<void(CheckpointId)> abort_handler_;

  moodycamel::ConcurrentQueue<Event> events_;
  Parker parker_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> final_completed_{false};

  // Coordinator-thread state: touched by the coordinator thread only (Loop and what it calls).
  CheckpointId next_id_;
  std::map<CheckpointId, Pending> pending_;
  size_t sources_finished_ = 0;
  uint32_t consecutive_failures_ = 0;
  uint32_t undrained_finals_ = 0;  // final checkpoints completed with records still in flight
  Clock::time_point last_trigger_;
  Clock::time_point last_end_;  // when the last checkpoint completed or failed (checkpoint.min_pause)
  bool terminating_ = false;

  mutable Mutex describe_mu_;
  std::string description_ GUARDED_BY(describe_mu_);  // refreshed by the coordinator thread
  mutable Mutex stats_mu_;
  CheckpointStats stats_ GUARDED_BY(stats_mu_);
};

}  // namespace cairn

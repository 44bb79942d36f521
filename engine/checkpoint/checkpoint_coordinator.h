// CheckpointCoordinator triggers checkpoints, collects the tasks' acknowledgements, commits
// completed checkpoints, and decides when a bounded job may end.
//
// A checkpoint goes PendingCheckpoint -> (all tasks acknowledged) -> _metadata committed ->
// CompletedCheckpoint -> tasks notified -> retention applied (on the CheckpointCleaner's
// thread, which Stop() drains). It fails (and its directory is
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
#include <optional>
#include <thread>
#include <iterator>
#include <vector>

#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/base/mutex.h"
#include "engine/base/parker.h"
#include "engine/checkpoint/checkpoint_cleaner.h"
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
  // Sources only: end the input now, as if it were exhausted (the final watermark, then
  // SourceFinished): a stop with --drain.
  virtual void Drain() {}
};

// Why a checkpoint failed; every reason has a message for users.
enum class CheckpointFailureReason {
  kDeclined,             // a task could not snapshot or persist its state
  kTimeout,              // not complete within checkpoint.timeout
  kMetadataWriteFailed,  // the commit point could not be written
  kSavepointWriteFailed, // the checkpoint committed, but its savepoint copy could not be written
  kJobEnded,             // the job ended (or was cancelled) before the checkpoint completed
  kUncountedInFlight,    // a load-balanced edge's counts do not add up (Mattern's termination)
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
  // Every completed checkpoint's duration, as a histogram (GET /metrics): counts of durations
  // <= kDurationBucketsMs[i] (cumulative), and their sum.
  static constexpr int64_t kDurationBucketsMs[] = {10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000};
  uint64_t duration_buckets[std::size(kDurationBucketsMs)] = {};
  uint64_t last_state_bytes = 0;
  uint64_t last_channel_state_bytes = 0;

  // Counts a completed checkpoint; keeps at most `history` (>= 1) durations.
  void RecordCompleted(CheckpointId id, int64_t duration_ms, size_t history);
};

// A savepoint to take (state/savepoint.h): `cairn savepoint`, `cairn stop`, the REST API.
struct SavepointRequest {
  std::string dir;  // the target directory (savepoint-<id>-<time> is created in it)
  // What the job does once the savepoint is committed: go on; stop (sources end the stream
  // right after it, no window is flushed); or drain (the sources end their input first, the
  // final watermark flushes the windows, and the final checkpoint is the savepoint).
  enum class Then { kContinue, kStop, kDrain } then = Then::kContinue;
  // Called exactly once, on the coordinator thread (or in Stop()): OK with the checkpoint id
  // and the savepoint directory, or why it failed.
  std::function<void(const Status&, CheckpointId, const std::string& path)> done;
};

// One checkpoint as the REST API shows it (GET /api/checkpoints): completed, failed (with its
// reason) or in progress. The coordinator keeps the latest checkpoint.history of them.
struct CheckpointRecord {
  CheckpointId id = 0;
  std::string kind = "checkpoint";  // or "savepoint"
  std::string status;               // "in_progress", "completed", "failed"
  std::string failure;              // why it failed; "" otherwise
  std::string path;                 // chk-<id>, or the savepoint's directory
  int64_t trigger_time_ms = 0;
  int64_t duration_ms = 0;          // trigger to completion or failure
  std::string mode;
  bool final_checkpoint = false;
  uint64_t state_bytes = 0, channel_state_bytes = 0;
  int64_t alignment_ms = 0, sync_ms = 0, async_ms = 0;
  size_t acknowledged = 0, tasks = 0;
  std::vector<SubtaskStateHandle> subtasks;
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
  // Where informational notes go (a savepoint written); default: stderr as "cairn: <note>".
  void SetInfoLog(std::function<void(const std::string&)> f) { info_ = std::move(f); }

  void Start();
  void Stop();

  void Acknowledge(TaskAck ack);
  void SourceFinished(int task);
  // Takes a savepoint with the next checkpoint (triggered at once when the number of pending
  // checkpoints allows). Any thread. After Stop(), `done` is called at once with Aborted.
  void RequestSavepoint(SavepointRequest r);
  // The latest checkpoint.history checkpoints (completed and failed) and the pending ones,
  // oldest first (any thread).
  std::vector<CheckpointRecord> History() const EXCLUDES(stats_mu_);
  // The newest completed savepoint whose copy committed, kept apart from the history (as
  // Flink's `latest.savepoint`): a savepoint stays visible after checkpoint.history periodic
  // checkpoints pushed it out. nullopt while this coordinator completed none (any thread).
  std::optional<CheckpointRecord> LatestSavepoint() const EXCLUDES(stats_mu_);
  size_t in_progress() const { return in_progress_.load(std::memory_order_relaxed); }

  CheckpointStats stats() const EXCLUDES(stats_mu_);
  // The first failure of a retention pass ("checkpoint retention: ..."), OK when none; final
  // after Stop(), which waits for the last pass. The listener hears of it too, when it happens:
  // a listener that only queues it (the cluster coordinator) reads this after Stop(), since the
  // last pass may fail after everything else ended.
  Status retention_failure() const EXCLUDES(stats_mu_);
  // The pending checkpoints and which tasks have answered, for diagnostics (any thread).
  std::string Describe() const EXCLUDES(describe_mu_);
  bool finished() const { return final_completed_.load(); }
  // The savepoint a stop took (SavepointRequest::Then other than kContinue); "" when none.
  // Read after Stop().
  const std::string& stop_savepoint() const { return stop_savepoint_; }

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
    std::vector<SavepointRequest> savepoints;  // taken with this checkpoint
    // Load-balanced edge -> (items sent before the producers' snapshots, items of an older
    // colour received by the consumers), summed over the acknowledgements.
    std::map<std::string, std::pair<uint64_t, uint64_t>> rebalance;
  };
  // Mattern's termination: "" when every load-balanced edge received what was sent before the
  // snapshots; otherwise what does not add up.
  static std::string RebalanceMismatch(const Pending& p);
  struct Event {
    enum class Kind { kAck, kSourceFinished, kSavepoint } kind;
    TaskAck ack;
    int task = 0;
    SavepointRequest savepoint;
  };

  void Loop();
  void OnAck(TaskAck ack);
  void Trigger(bool final_candidate);
  void Complete(Pending p);
  void AddHistory(CheckpointRecord r) REQUIRES(stats_mu_);
  void PublishPending() EXCLUDES(stats_mu_);
  void Fail(CheckpointId id, CheckpointFailureReason reason, const std::string& detail);
  // Tells the abort handler, then removes the checkpoint's directory, _metadata first.
  void Discard(CheckpointId id);
  // A retention pass failed (the cleaner's thread): keeps the first failure, tells the listener.
  void RetentionFailed(const Status& s) EXCLUDES(stats_mu_);

  // Constant after construction.
  const std::string job_name_;
  const uint32_t max_parallelism_;
  const CheckpointConfig config_;
  const CheckpointStore* const store_;
  const std::vector<CheckpointParticipant*> tasks_;
  std::vector<CheckpointParticipant*> sources_;
  Listener* const listener_;
  std::function<void(CheckpointId)> abort_handler_;
  std::function<void(const std::string&)> info_;

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
  std::vector<SavepointRequest> savepoints_;  // requested, not yet triggered
  bool draining_ = false;                     // a stop with drain told the sources to end
  std::atomic<size_t> in_progress_{0};
  std::string stop_savepoint_;

  mutable Mutex describe_mu_;
  std::string description_ GUARDED_BY(describe_mu_);  // refreshed by the coordinator thread
  mutable Mutex stats_mu_;
  CheckpointStats stats_ GUARDED_BY(stats_mu_);
  std::vector<CheckpointRecord> history_ GUARDED_BY(stats_mu_);  // ended ones, oldest first
  std::vector<CheckpointRecord> pending_records_ GUARDED_BY(stats_mu_);
  std::optional<CheckpointRecord> latest_savepoint_ GUARDED_BY(stats_mu_);
  bool stopped_ GUARDED_BY(stats_mu_) = false;
  Status retention_failure_ GUARDED_BY(stats_mu_);

  // Retention after each completion, off the coordinator thread (RetentionFailed). Last, so
  // that its thread ends before the members it uses go.
  CheckpointCleaner cleaner_;
};

}  // namespace cairn

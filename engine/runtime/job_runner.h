// JobRunner runs one job to its end: it restores from a checkpoint when asked
// (engine/runtime/restore.h), deploys the tasks and channels of the ExecutionPlan
// (engine/runtime/deploy.h), runs the coordinator, the persister and one thread per task,
// reports progress to its caller, and returns a summary.
//
// Contract: everything that can be checked before the job touches the disk is checked first
// (the checkpoint to restore, its compatibility with the job, its state files, the sources'
// inputs, the sinks' paths, and that a start without --restore would not duplicate what
// earlier runs committed), so that bad input fails with nothing changed. checkpoint.dir is
// locked (one job per directory) before the checkpoint to restore is chosen. Then the runner
// removes incomplete checkpoints left by a crash, supersedes checkpoints a restore or --fresh
// abandons, and starts. SIGINT and SIGTERM cancel the job (Aborted), SIGUSR1 prints every
// task's state on stderr; the previous handlers are back when RunJob returns. RunJob is not
// re-entrant per checkpoint.dir.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/checkpoint/checkpoint_coordinator.h"
#include "jobs/job_spec.h"
#include "engine/base/status.h"

namespace cairn {

// How far a running job has come: what RunOptions::progress is handed once per interval.
struct RunProgress {
  double seconds = 0;                     // since processing started
  uint64_t source_records = 0;            // read by the sources so far
  uint64_t sink_records = 0;              // as RunSummary::sink_records, so far
  uint64_t sink_records_in_interval = 0;  // since the previous report
  double interval_seconds = 0;            // the progress interval
  CheckpointStats checkpoints;
};

// One task (a chain's subtask) of a running job, as the REST API shows it: counters the task
// keeps anyway (relaxed atomics), read without stopping it.
struct TaskView {
  std::string name;  // "<chain>[<subtask>]", as in the SIGUSR1 dump
  bool source = false;
  uint64_t records_in = 0, records_out = 0;
  uint64_t blocked_ns = 0;      // time blocked on full output channels since the task started
  bool has_watermark = false;   // the task has sent a watermark downstream
  int64_t watermark = 0;        // the last one (event time, ms)
};

// A running job, for an observer on another thread (the REST server, jobs/cli/rest_server.h):
// handed to RunOptions::on_start, valid until RunOptions::on_end returns. Every call is cheap
// and thread-safe, and none stops or slows a task.
class RunningJob {
 public:
  virtual ~RunningJob() = default;
  virtual const JobSpec& spec() const = 0;
  // "running", "finishing" (sources finished, or a stop was asked for), "finished", "failed",
  // "cancelled", "restarting" (this attempt failed; the next restores the latest checkpoint).
  virtual std::string state() const = 0;
  virtual int64_t start_time_ms() const = 0;  // Unix epoch milliseconds (of this attempt)
  virtual uint32_t restarts() const = 0;       // in-process restarts before this attempt (restart:)
  virtual uint32_t restores() const = 0;       // restores by this process: --restore, then each restart
  virtual CheckpointId restored_from() const = 0;  // 0: fresh start
  virtual std::string restored_path() const = 0;
  virtual std::vector<TaskView> Tasks() const = 0;
  virtual CheckpointStats checkpoint_stats() const = 0;
  virtual std::vector<CheckpointRecord> checkpoint_history() const = 0;
  virtual std::optional<CheckpointRecord> latest_savepoint() const = 0;
  virtual size_t checkpoints_in_progress() const = 0;
  // checkpoint.savepoint_dir, or <checkpoint.dir>/savepoints.
  virtual std::string default_savepoint_dir() const = 0;
  // CheckpointCoordinator::RequestSavepoint; a stop (then != kContinue) also marks the job
  // finishing.
  virtual void RequestSavepoint(SavepointRequest r) = 0;
};

// The RunningJob of one attempt whose checkpoints a CheckpointCoordinator in this process runs
// (RunJob's, and a worker-process coordinator's generation, jobs/cli/cluster.h): everything
// but the tasks' counters, Tasks(), which the subclass reads from wherever its tasks run.
// `spec` and `coordinator` outlive it.
class CoordinatedJob : public RunningJob {
 public:
  CoordinatedJob(const JobSpec& spec, CheckpointCoordinator* coordinator, CheckpointId restored_from,
                 std::string restored_path, uint32_t restarts, uint32_t restores);
  const JobSpec& spec() const override { return spec_; }
  std::string state() const override;
  int64_t start_time_ms() const override { return start_ms_; }
  uint32_t restarts() const override { return restarts_; }
  uint32_t restores() const override { return restores_; }
  CheckpointId restored_from() const override { return restored_from_; }
  std::string restored_path() const override { return restored_path_; }
  CheckpointStats checkpoint_stats() const override { return coordinator_->stats(); }
  std::vector<CheckpointRecord> checkpoint_history() const override { return coordinator_->History(); }
  std::optional<CheckpointRecord> latest_savepoint() const override { return coordinator_->LatestSavepoint(); }
  size_t checkpoints_in_progress() const override { return coordinator_->in_progress(); }
  std::string default_savepoint_dir() const override;
  void RequestSavepoint(SavepointRequest r) override;
  // The final state, once the attempt has ended (a string literal).
  void set_state(const char* s) { state_.store(s); }

 private:
  const JobSpec& spec_;
  const uint32_t restarts_;
  const uint32_t restores_;
  CheckpointCoordinator* const coordinator_;
  const CheckpointId restored_from_;
  const std::string restored_path_;
  const int64_t start_ms_;
  std::atomic<bool> stopping_{false};
  std::atomic<const char*> state_{nullptr};
};

struct RunOptions {
  std::string restore;          // "" fresh start, "latest", or a checkpoint path
  // --fresh: start over on purpose although checkpoint.dir holds completed checkpoints or a
  // file sink's directory holds committed output (without it such a start is InvalidArgument).
  // The old checkpoints are superseded (kept until checkpoint.retain newer ones completed,
  // never restorable again) and the old output is moved to <sink path>/_superseded/. Not with restore.
  bool fresh = false;
  // Called on the runner's thread once per progress_interval while the job runs (`cairn run`
  // prints a line on stderr: jobs/cli/progress.h). Default: none.
  std::function<void(const RunProgress&)> progress;
  // How often progress is reported. Default: 1 s. REQUIRES: > 0.
  std::chrono::milliseconds progress_interval{1000};
  // Called on the runner's thread once the job is deployed (before the first record) and once
  // it has ended (its final state set, before its tasks are destroyed); with restart: once
  // per attempt each. Default: none.
  std::function<void(RunningJob*)> on_start;
  std::function<void(RunningJob*)> on_end;
  // Called with each informational note, one line without a newline: the checkpoint being
  // restored, the restore's time, in-process restarts, savepoints written. Warnings and errors
  // are not notes: they always go to stderr. Default (unset): printed on stderr as
  // "cairn: <note>"; `cairn run --quiet` sets one that drops them.
  std::function<void(const std::string&)> info;
};

struct RunSummary {
  double seconds = 0;
  double restore_seconds = 0;       // restore + deploy, before the first record (also a note: RunOptions::info)
  size_t restored_keys = 0;         // keys the restore loaded (0: fresh start)
  CheckpointId restored_from = 0;   // 0: fresh start
  uint64_t source_records = 0;
  uint64_t sink_records = 0;        // consumed by sinks; by all non-source tasks when none
  bool has_sinks = true;
  CheckpointStats checkpoints;
  // The kTopKeys keys of keyed operators with the largest values, ranked by RanksBefore
  // (engine/dataflow/operator_capabilities.h): largest first, ties by key.
  static constexpr size_t kTopKeys = 10;
  std::vector<std::pair<std::string, int64_t>> top_keys;
  // Malformed input records skipped (SkippedRecords operators, e.g. file_source on_error: skip),
  // checkpointed, so counted since the job first started; `counts_skipped`: some operator skips.
  uint64_t records_skipped = 0;
  bool counts_skipped = false;
  // Late records dropped by windows (LateRecords operators), checkpointed like records_skipped;
  // `counts_late`: the job has such an operator.
  uint64_t records_late = 0;
  bool counts_late = false;
  // The savepoint a stop (cairn stop, POST /api/stop) took before the job ended; "" otherwise.
  std::string stopped_with_savepoint;
  // In-process restarts (restart:); the record counts above are those of the last attempt,
  // which restored checkpoint restored_from.
  uint32_t restarts = 0;
};

Status RunJob(const JobSpec& spec, const RunOptions& options, RunSummary* summary);

}  // namespace cairn

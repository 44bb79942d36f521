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

#include <chrono>
#include <cstdint>
#include <functional>
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
};

struct RunSummary {
  double seconds = 0;
  double restore_seconds = 0;       // restore + deploy, before the first record (also on stderr)
  CheckpointId restored_from = 0;   // 0: fresh start
  uint64_t source_records = 0;
  uint64_t sink_records = 0;        // consumed by sinks; by all non-source tasks when none
  bool has_sinks = true;
  CheckpointStats checkpoints;
  std::vector<std::pair<std::string, int64_t>> top_keys;  // of keyed operators, largest first
  // Malformed input records skipped (SkippedRecords operators, e.g. file_source on_error: skip),
  // checkpointed, so counted since the job first started; `counts_skipped`: some operator skips.
  uint64_t records_skipped = 0;
  bool counts_skipped = false;
  // Late records dropped by windows (LateRecords operators), checkpointed like records_skipped;
  // `counts_late`: the job has such an operator.
  uint64_t records_late = 0;
  bool counts_late = false;
};

Status RunJob(const JobSpec& spec, const RunOptions& options, RunSummary* summary);

}  // namespace cairn

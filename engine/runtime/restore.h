// Restore decides what a run starts from: it chooses and checks the checkpoint a `--restore`
// resumes from and redistributes its state to the job's parallelism (a RestorePlan), refuses a
// start without `--restore` that would produce again what earlier runs committed, and, once
// the job owns checkpoint.dir, supersedes what a restore of an older checkpoint or `--fresh`
// abandons.
//
// Contract: the checks come first and change nothing on disk (PreflightOperators,
// PrepareRestore, FindEarlierRuns, CheckFreshStart); only SupersedeAbandoned writes, and only
// once the caller holds checkpoint.dir's lock and owns the directory (engine/runtime/
// job_runner.cc runs them in that order). A refusal is InvalidArgument or NotFound with a
// message that says what to do; damage is Corruption naming the file. The restored checkpoint
// is never modified.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/runtime/execution_plan.h"
#include "jobs/job_spec.h"
#include "jobs/registry.h"
#include "state/checkpoint_store.h"
#include "state/state_backend.h"

namespace cairn {

// What a restore provides, read and checked before anything on disk changes; inactive for a
// start without --restore.
struct RestorePlan {
  bool active = false;
  CompletedCheckpoint checkpoint;
  std::map<std::pair<std::string, uint32_t>, std::string> operator_state;  // (op, subtask) -> bytes
  std::map<std::pair<std::string, uint32_t>, std::string> list_state;      // (op, subtask) -> list.state bytes
  std::map<std::string, std::vector<KeyedSnapshotHandle>> keyed;           // op -> snapshots
  // (head op, subtask) -> channel name -> in-flight records
  std::map<std::pair<std::string, uint32_t>, std::vector<RestoredChannel>> channels;
  // load-balanced edge (RebalanceEdgeName) -> its in-flight records, put back on its shared
  // queue before anything new (at any parallelism of either side)
  std::map<std::string, std::vector<RecordBatch>> rebalance;
};

// An operator that commits output files (OperatorType::committed_output): a start must not
// produce its output again beside what is there.
struct FileSink {
  const OperatorConfig* config;
  const OperatorType* type;
};

// Runs every operator type's pre-flight check (a sink directory that cannot be created fails
// now, not at Open) and lists the file sinks, in job order.
Status PreflightOperators(const JobSpec& spec, std::vector<FileSink>* file_sinks);

// `restore` is RunOptions::restore: "" (then *out stays inactive), "latest" or a checkpoint
// path. Chooses the checkpoint ("latest": the newest completed one that is not superseded,
// warning about damaged ones on stderr; fails closed when there is none, since starting from
// the beginning would commit every record again), refuses a superseded checkpoint of
// checkpoint.dir and one whose max_parallelism or operators do not fit the job, reads every
// operator-state and channel-state file, reads every keyed-state snapshot through `backend`,
// and redistributes operator state and channel state to the job's parallelism
// (state/operator_state_redistribution.h, engine/runtime/state_redistribution.h).
Status PrepareRestore(const JobSpec& spec, const ExecutionPlan& plan, const std::string& restore,
                      const StateBackend& backend, RestorePlan* out);

// What a start without --restore would run next to: the completed checkpoints of
// checkpoint.dir and the committed output of the file sinks.
struct EarlierRuns {
  std::vector<CompletedCheckpoint> checkpoints;  // oldest first
  std::string found;                             // one "\n  ..." line per finding; "" when none
};

// Lists the earlier runs' checkpoints and committed output (for a start without --restore).
Status FindEarlierRuns(const JobSpec& spec, const std::vector<FileSink>& file_sinks, EarlierRuns* out);

// InvalidArgument listing what earlier runs left, unless there is nothing or `fresh` (--fresh:
// start over on purpose).
Status CheckFreshStart(const EarlierRuns& earlier, bool fresh);

// Once the job owns checkpoint.dir (`store`): a restore of a checkpoint older than the newest
// supersedes the newer ones (their output is set aside by the sinks and produced again, so they
// must never be restored); --fresh supersedes every earlier checkpoint and moves the file
// sinks' committed output aside. Says what it did on stderr.
Status SupersedeAbandoned(const RestorePlan& restore, const EarlierRuns& earlier, bool fresh,
                          const std::vector<FileSink>& file_sinks, const CheckpointStore& store);

}  // namespace cairn

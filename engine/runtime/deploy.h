// Deploy turns a job's ExecutionPlan into what runs: an instance of every operator subtask
// with its context and restored operator state, the keyed state of the keyed ones (from the
// StateBackend), and one Task per subtask of a chain, wired to its neighbours by Channels.
//
// Contract: the steps run in order on the caller's thread, before any task thread starts.
// InstantiateOperators changes nothing on disk (of the operators it opens only the sources,
// which only read their input, so that a missing input fails before anything changes);
// OpenSubtasks and BuildTasks run once the job owns checkpoint.dir. Channel names, "<producer
// tail op>[i]-><consumer head op>[j]", depend on nothing but the job's operators: they appear
// in messages and metrics and identify channel state in checkpoints.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "engine/dataflow/channel.h"
#include "engine/runtime/execution_plan.h"
#include "engine/runtime/restore.h"
#include "engine/runtime/task.h"
#include "jobs/job_spec.h"
#include "state/state_backend.h"

namespace cairn {

// The operators of one subtask of a chain, before its Task exists.
struct SubtaskChain {
  int chain;         // index into ExecutionPlan::chains
  uint32_t subtask;
  std::vector<ChainedOperator> ops;  // head first
  int task = 0;      // the Task's index: chain by chain, subtask by subtask, over the whole job
};

// Creates every operator subtask of `plan` (chain by chain, subtask by subtask), with its
// context and, when `restore` is active, the checkpoint's id and its redistributed operator
// state; opens the sources. `local` (by task index; null: every task): the subtasks this
// process runs (a worker process runs only its own, engine/runtime/worker_assignment.h).
Status InstantiateOperators(const JobSpec& spec, const ExecutionPlan& plan, const RestorePlan& restore,
                            std::vector<SubtaskChain>* out, const std::vector<bool>* local = nullptr);

// Gives every keyed operator subtask its keyed state through `backend`: restored from the
// snapshots of restore.keyed whose key groups overlap its own, or empty; its working files go
// to WorkingStatePath(work_dir, op, subtask). All subtasks at once, one thread each (a restore
// is CPU-bound per subtask). Then opens every operator that is not a source. Once `stop` (when
// non-null) is set, the restores give up (StateBackend::RestoreKeyed) and it returns Aborted
// without opening anything, also when they had all completed.
Status OpenSubtasks(const JobSpec& spec, const StateBackend& backend, const RestorePlan& restore,
                    const std::string& work_dir, std::vector<SubtaskChain>* subtasks,
                    const std::atomic<bool>* stop = nullptr);

// The tasks and channels of a deployed job. Channels are destroyed before the tasks.
struct Deployment {
  // Task i has index i; null for a task another worker process runs.
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<std::unique_ptr<Channel>> channels;  // with the stand-ins of the rebalance slots
  std::vector<std::unique_ptr<RebalanceQueue>> rebalance_queues;  // one per load-balanced edge

  std::vector<Task*> task_ptrs() const;  // the tasks of this process
  std::vector<Channel*> channel_ptrs() const;
};

// One channel to make between two tasks. `from` or `to` is null when that task runs in another
// worker process (then only this process's end is made).
struct ChannelSpec {
  std::string name;
  size_t capacity = 0;  // batches
  Task* from = nullptr;
  Task* to = nullptr;
  int from_task = 0, to_task = 0;  // the tasks' indexes
  bool feedback = false;  // unbounded, with backlog_limit
  uint64_t backlog_limit = 0;
  BacklogListener* listener = nullptr;
  SchemaRef schema;
};
// Makes the channel of `spec` into `owned`: returns the Channel `from` pushes into and sets
// *consumer_end to the one `to` reads (the same Channel in one process; the two ends of a
// remote channel when the tasks run in different workers, engine/runtime/remote_channels.h);
// null for an end this process does not have. Called for every channel of the plan, in the
// plan's order, in every process (so that a count of the calls can number remote channels).
using ChannelMaker = std::function<Channel*(const ChannelSpec& spec, std::vector<std::unique_ptr<Channel>>* owned,
                                            Channel** consumer_end)>;
// The default: one local Channel between the two tasks' parkers.
Channel* MakeLocalChannel(const ChannelSpec& spec, std::vector<std::unique_ptr<Channel>>* owned, Channel** consumer_end);

// Makes one Task per subtask (with its restored channel state, taken from restore->channels)
// and the channels of every plan edge: forward edges link subtask i to subtask i, hash edges
// every producer subtask to every consumer subtask; feedback channels are unbounded.
// Tasks report to `tasks_listener`, channels to `backlog_listener`; both outlive the deployment.
// `maker` (default: one local Channel per edge) makes the channels. `subtasks` may hold only
// some tasks (InstantiateOperators' `local`): the others stay null in out->tasks. Load-balanced
// edges must then have all their tasks here or none (CheckRebalanceEdges).
void BuildTasks(const JobSpec& spec, const ExecutionPlan& plan, std::vector<SubtaskChain> subtasks, RestorePlan* restore,
                SnapshotPersister* persister, TaskListener* tasks_listener, BacklogListener* backlog_listener,
                Deployment* out, const ChannelMaker& maker = nullptr);

}  // namespace cairn

// The test-only hooks of a run (docs/faults.md), parsed in one place for `cairn run` (RunJob)
// and for worker processes (jobs/cli/cluster.h):
//   CAIRN_INJECT_FAILURE=<operator>:<n>[,<n>...]: in attempt k (0: the first run, then each
//     restart, in-process or a coordinator's new generation) the first subtask (subtask 0) of
//     the non-source task running <operator> fails once it has read n_k records; attempts past
//     the list run without a failure.
//   CAIRN_SLOW_SUBTASK=<operator>:<subtask>:<microseconds>: the task running that subtask of
//     <operator> sleeps that long before the operator processes each batch.
//
// Contract: ParseTestHooks reads the environment and checks both against the job (operator,
// subtask), InvalidArgument naming the variable and its value otherwise; unset or empty
// variables give no hook. ApplyTestHooks arms the tasks of one attempt; `tasks` may be only
// some of the job's tasks (a worker's own), each hook lands on the task that has its subtask.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/runtime/task.h"
#include "jobs/job_spec.h"

namespace cairn {

struct TestHooks {
  std::string inject_op;              // "": no injected failure
  std::vector<uint64_t> inject_after;  // by attempt
  std::string slow_op;                // "": no slow subtask
  uint32_t slow_subtask = 0;
  int64_t slow_us = 0;
};

Status ParseTestHooks(const JobSpec& spec, TestHooks* out);

// Arms the tasks of attempt `attempt` (0 first).
void ApplyTestHooks(const TestHooks& hooks, uint32_t attempt, const std::vector<Task*>& tasks);

}  // namespace cairn

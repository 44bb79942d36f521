// Which worker process runs each task of a job (docs/scale-out.md "Processes and control").
//
// The unit is one subtask of a chain (one Task: the operators of a chain never run in two
// processes). Chains linked by forward edges (equal parallelism, subtask i -> subtask i) form a
// group; subtask i of every chain of a group goes to the same worker, so forward edges stay in
// one process and only hash edges cross the network. Load-balanced (rebalance) edges group
// their chains too, but their shared queue lives in one process: across worker processes they
// are not supported yet (with CAIRN_LOOPBACK_WORKERS they stay in memory). Groups, in the order of their first
// chain, are laid round robin over the workers, each starting where the previous one stopped,
// so that the tasks spread evenly. The result depends only on the plan and the number of
// workers: the coordinator and every worker compute the same one.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/status.h"
#include "engine/runtime/execution_plan.h"

namespace cairn {

struct WorkerAssignment {
  // By task index, numbered as BuildTasks numbers tasks: chain by chain, subtask by subtask.
  std::vector<uint32_t> worker_of_task;
  // The task indexes of each worker, ascending.
  std::vector<std::vector<int>> tasks_of_worker;
};

// InvalidArgument when `workers` is 0.
Status AssignWorkers(const ExecutionPlan& plan, uint32_t workers, WorkerAssignment* out);

// InvalidArgument naming the edge when a load-balanced (rebalance) edge has tasks on more than
// one worker: its shared queue cannot cross processes (docs/scale-out.md).
Status CheckRebalanceEdges(const JobSpec& spec, const ExecutionPlan& plan, const WorkerAssignment& a);

}  // namespace cairn

#include "engine/runtime/worker_assignment.h"

#include <numeric>
#include <set>
#include <string>

namespace cairn {

Status AssignWorkers(const ExecutionPlan& plan, uint32_t workers, WorkerAssignment* out) {
  if (workers == 0) return Status::InvalidArgument("the number of workers must be at least 1");
  const size_t n = plan.chains.size();
  // Groups of chains linked by forward edges (union-find, each group named by its smallest chain).
  std::vector<int> group(n);
  std::iota(group.begin(), group.end(), 0);
  auto find = [&](int c) {
    while (group[c] != c) c = group[c] = group[group[c]];
    return c;
  };
  for (const PlanEdge& e : plan.edges) {
    if (e.hash) continue;
    int a = find(e.from_chain), b = find(e.to_chain);
    if (a != b) group[std::max(a, b)] = std::min(a, b);
  }
  // The first task index of each chain.
  std::vector<int> first_task(n + 1, 0);
  for (size_t c = 0; c < n; ++c) first_task[c + 1] = first_task[c] + static_cast<int>(plan.chains[c].parallelism);
  out->worker_of_task.assign(static_cast<size_t>(first_task[n]), 0);
  out->tasks_of_worker.assign(workers, {});
  std::vector<uint32_t> offset(n, 0);  // by group root
  uint32_t next = 0;
  for (size_t c = 0; c < n; ++c) {
    int root = find(static_cast<int>(c));
    if (root == static_cast<int>(c)) {  // the group's first chain: it takes the next slots
      offset[c] = next;
      next = static_cast<uint32_t>((next + plan.chains[c].parallelism) % workers);
    }
    for (uint32_t i = 0; i < plan.chains[c].parallelism; ++i) {
      uint32_t w = (offset[root] + i) % workers;
      int task = first_task[c] + static_cast<int>(i);
      out->worker_of_task[static_cast<size_t>(task)] = w;
      out->tasks_of_worker[w].push_back(task);
    }
  }
  return Status::OK();
}

Status CheckRebalanceEdges(const JobSpec& spec, const ExecutionPlan& plan, const WorkerAssignment& a) {
  std::vector<int> first_task(plan.chains.size() + 1, 0);
  for (size_t c = 0; c < plan.chains.size(); ++c)
    first_task[c + 1] = first_task[c] + static_cast<int>(plan.chains[c].parallelism);
  for (const PlanEdge& e : plan.edges) {
    if (!e.rebalance) continue;
    std::set<uint32_t> workers;
    for (int c : {e.from_chain, e.to_chain})
      for (int t = first_task[c]; t < first_task[c + 1]; ++t) workers.insert(a.worker_of_task[static_cast<size_t>(t)]);
    if (workers.size() > 1)
      return Status::InvalidArgument(
          "operator '" + spec.operators[plan.chains[e.to_chain].ops.front()].id + "': its input from '" +
          spec.operators[plan.chains[e.from_chain].ops.back()].id +
          "' is load-balanced (partition: rebalance), and its tasks would run in " + std::to_string(workers.size()) +
          " worker processes; a load-balanced edge cannot cross processes yet: use partition: hash or forward, "
          "parallelism 1 on both sides, or one worker (docs/scale-out.md)");
  }
  return Status::OK();
}

}  // namespace cairn

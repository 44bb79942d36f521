// Specification of AssignWorkers: every task on exactly one worker, forward edges kept within
// one worker, tasks spread evenly, and the same answer for the same plan.
#include "engine/runtime/worker_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jobs/job_loader.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;

PlanChain Chain(uint32_t parallelism) {
  PlanChain c;
  c.parallelism = parallelism;
  return c;
}

// The first task index of chain `c` (tasks are numbered chain by chain).
int FirstTask(const ExecutionPlan& plan, int c) {
  int t = 0;
  for (int i = 0; i < c; ++i) t += static_cast<int>(plan.chains[i].parallelism);
  return t;
}

TEST(WorkerAssignmentTest, WordCountOnTwoWorkersGivesEachWorkerOneSubtaskOfEveryChain) {
  JobSpec spec;
  Status s = LoadJob(testing::SourceDir() + "/jobs/wordcount.yaml", {}, &spec);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExecutionPlan plan = ExecutionPlan::Build(spec);  // source+tokenize[2] -(hash)-> count+sink[2]
  WorkerAssignment a;
  ASSERT_TRUE(AssignWorkers(plan, 2, &a).ok());
  EXPECT_THAT(a.worker_of_task, ElementsAre(0u, 1u, 0u, 1u));
  EXPECT_THAT(a.tasks_of_worker, ElementsAre(ElementsAre(0, 2), ElementsAre(1, 3)));
}

TEST(WorkerAssignmentTest, ForwardEdgesStayOnOneWorkerAndTasksSpreadEvenly) {
  // A source of parallelism 3 feeding two chains by forward edges (a fan-out: not chained),
  // then a hash edge to a chain of parallelism 2, and a separate source of parallelism 1.
  ExecutionPlan plan;
  plan.chains = {Chain(3), Chain(3), Chain(3), Chain(2), Chain(1)};
  plan.edges = {{0, 1, 0, false, false}, {0, 2, 0, false, false}, {1, 3, 0, true, false}, {2, 3, 0, true, false},
                {4, 3, 1, true, false}};
  for (uint32_t workers : {1u, 2u, 3u, 4u}) {
    WorkerAssignment a;
    ASSERT_TRUE(AssignWorkers(plan, workers, &a).ok());
    ASSERT_EQ(a.worker_of_task.size(), 12u);
    for (const PlanEdge& e : plan.edges) {
      if (e.hash) continue;
      for (uint32_t i = 0; i < plan.chains[e.from_chain].parallelism; ++i)
        EXPECT_EQ(a.worker_of_task[FirstTask(plan, e.from_chain) + i], a.worker_of_task[FirstTask(plan, e.to_chain) + i])
            << "forward edge " << e.from_chain << "->" << e.to_chain << " subtask " << i << " on " << workers << " workers";
    }
    // Every task on one worker, listed once; the groups' slots (3 + 2 + 1) spread round robin.
    std::vector<int> seen(12, 0);
    size_t most = 0, least = SIZE_MAX;
    for (uint32_t w = 0; w < workers; ++w) {
      for (int t : a.tasks_of_worker[w]) {
        seen[t]++;
        EXPECT_EQ(a.worker_of_task[t], w);
      }
      most = std::max(most, a.tasks_of_worker[w].size());
      least = std::min(least, a.tasks_of_worker[w].size());
    }
    for (int t = 0; t < 12; ++t) EXPECT_EQ(seen[t], 1) << "task " << t;
    // A slot of the first group carries 3 tasks, so loads differ by at most one slot's tasks.
    EXPECT_LE(most - least, 3u) << workers << " workers";
    WorkerAssignment again;
    ASSERT_TRUE(AssignWorkers(plan, workers, &again).ok());
    EXPECT_EQ(again.worker_of_task, a.worker_of_task) << "deterministic";
  }
  WorkerAssignment three;
  ASSERT_TRUE(AssignWorkers(plan, 3, &three).ok());
  // Group {0,1,2}: subtask i on worker i; chain 3 continues at worker 0; chain 4 at worker 2.
  EXPECT_THAT(three.worker_of_task, ElementsAre(0u, 1u, 2u, 0u, 1u, 2u, 0u, 1u, 2u, 0u, 1u, 2u));
}

TEST(WorkerAssignmentTest, ZeroWorkersIsInvalid) {
  ExecutionPlan plan;
  plan.chains = {Chain(1)};
  WorkerAssignment a;
  EXPECT_TRUE(AssignWorkers(plan, 0, &a).IsInvalidArgument());
}

}  // namespace
}  // namespace cairn

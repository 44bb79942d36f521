// ExecutionPlan is the physical form of a JobSpec: operators chained into tasks (one thread
// per subtask of a chain) and the channels between tasks.
//
// Chaining (as Flink does): operator B joins the chain of A when B's only input is A, A's only
// consumer is B, the edge is forward (no key_by), and both have the same parallelism.
// Edges between chains are forward (subtask i -> subtask i, equal parallelism), hash (every
// producer subtask -> every consumer subtask, by key group) or rebalance (every producer
// subtask -> one shared queue that every consumer subtask reads; never chained). In a cyclic job, the edges that
// close a cycle (back edges of a depth-first walk from the sources, in file order) are
// feedback edges: their channels never block (a cycle of full channels would deadlock), a
// barrier is not waited for on them, and what arrives on them between a task's snapshot and
// the barrier coming around is recorded as channel state.
#pragma once

#include <string>
#include <vector>

#include "jobs/job_spec.h"

namespace cairn {

struct PlanChain {
  std::vector<int> ops;      // indexes into JobSpec::operators, head first
  uint32_t parallelism = 1;
  bool is_source = false;    // the head is a source
};

// One logical edge between two chains: from the tail of `from` to the head of `to`.
struct PlanEdge {
  int from_chain;
  int to_chain;
  int to_input;   // the consumer head's input index (position in its `inputs`)
  bool hash;      // key_by partitioning; else forward
  bool feedback;  // closes a cycle
  bool rebalance = false;  // load-balanced: one shared queue for every producer and consumer subtask
};

struct ExecutionPlan {
  std::vector<PlanChain> chains;
  std::vector<PlanEdge> edges;

  static ExecutionPlan Build(const JobSpec& spec);
  // "source+tokenize" style names for messages.
  std::string ChainName(const JobSpec& spec, int chain) const;
};

}  // namespace cairn

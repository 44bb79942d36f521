#include "engine/runtime/execution_plan.h"

#include <functional>
#include <map>
#include <set>

#include "jobs/job_graph.h"
#include "jobs/registry.h"

namespace cairn {

ExecutionPlan ExecutionPlan::Build(const JobSpec& spec) {
  const int n = static_cast<int>(spec.operators.size());
  std::map<std::string, int> index;
  for (int i = 0; i < n; ++i) index[spec.operators[i].id] = i;
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (const auto& in : spec.operators[i].inputs) consumers[index[in]].push_back(i);

  auto chainable = [&](int a, int b) {
    const OperatorConfig& cb = spec.operators[b];
    const OperatorType* tb = FindOperatorType(cb.type);
    if (tb != nullptr && tb->chain_head) return false;
    // A keyed type without key_by has one key (the empty one): its input edge is a hash edge too.
    if (tb != nullptr && tb->keyed) return false;
    if (cb.Rebalanced(0)) return false;
    return cb.inputs.size() == 1 && index[cb.inputs[0]] == a && consumers[a].size() == 1 && !cb.keyed() &&
           cb.parallelism == spec.operators[a].parallelism;
  };

  ExecutionPlan plan;
  std::vector<int> chain_of(n, -1);
  // Operators are validated to form a DAG; visit heads in file order and extend chains.
  for (int i = 0; i < n; ++i) {
    const OperatorConfig& c = spec.operators[i];
    bool is_head = !(c.inputs.size() == 1 && chainable(index[c.inputs[0]], i));
    if (!is_head) continue;
    PlanChain ch;
    ch.parallelism = c.parallelism;
    const OperatorType* t = FindOperatorType(c.type);
    ch.is_source = t != nullptr && t->role == OperatorRole::kSource;
    int cur = i;
    for (;;) {
      ch.ops.push_back(cur);
      chain_of[cur] = static_cast<int>(plan.chains.size());
      if (consumers[cur].size() == 1 && chainable(cur, consumers[cur][0])) {
        cur = consumers[cur][0];
      } else {
        break;
      }
    }
    plan.chains.push_back(std::move(ch));
  }
  // Feedback edges: the back edges of a depth-first walk from the sources (jobs/job_graph.h).
  const std::set<std::pair<int, int>> feedback = FeedbackInputs(spec);
  for (int ci = 0; ci < static_cast<int>(plan.chains.size()); ++ci) {
    int head = plan.chains[ci].ops.front();
    const OperatorConfig& c = spec.operators[head];
    const OperatorType* t = FindOperatorType(c.type);
    const bool hash = c.keyed() || (t != nullptr && t->keyed);
    for (int k = 0; k < static_cast<int>(c.inputs.size()); ++k) {
      int from_op = index[c.inputs[k]];
      plan.edges.push_back(
          PlanEdge{chain_of[from_op], ci, k, hash, feedback.count({head, k}) > 0, c.Rebalanced(static_cast<size_t>(k))});
    }
  }
  return plan;
}

std::string ExecutionPlan::ChainName(const JobSpec& spec, int chain) const {
  std::string s;
  for (int op : chains[chain].ops) {
    if (!s.empty()) s += "+";
    s += spec.operators[op].id;
  }
  return s;
}

}  // namespace cairn

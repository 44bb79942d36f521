#include "jobs/job_graph.h"

#include <functional>
#include <map>
#include <set>

#include "jobs/registry.h"

namespace cairn {

namespace {

Status ErrorAt(const std::string& place, const std::string& what) {
  return Status::InvalidArgument(place + ": " + what);
}

std::string SourceTypeNames() {
  std::string names;
  for (const auto& t : OperatorTypes()) {
    if (t.role != OperatorRole::kSource) continue;
    if (!names.empty()) names += ", ";
    names += t.name;
  }
  return names;
}

// The checks of one operator's inputs and key_by against the operators it reads from.
Status CheckOperatorEdges(const OperatorConfig& op, const OperatorPlaces& at,
                          const std::map<std::string, const OperatorConfig*>& by_id) {
  const OperatorType& t = *FindOperatorType(op.type);
  const std::string what = "operator '" + op.id + "'";
  if (t.role == OperatorRole::kSource && !op.inputs.empty())
    return ErrorAt(at.inputs, what + " is a source (type " + t.name + ") and cannot have inputs");
  if (t.role != OperatorRole::kSource && op.inputs.empty())
    return ErrorAt(at.inputs, what + " (type " + t.name + ") needs inputs: the ids of the operators it reads from");
  if (!op.key_by.empty() && !t.keyed)
    return ErrorAt(at.key_by, what + " has key_by, but its type " + t.name +
                                  " is not keyed (keyed types take key_by; others read their inputs as they come)");
  if (!op.keyed() && t.keyed && !t.key_by_optional)
    return ErrorAt(at.op, what + " (type " + t.name + ") is keyed and needs key_by: the field its input is keyed by");

  std::set<std::string> seen;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    const std::string& in = op.inputs[k];
    const std::string& place = at.input[k];
    if (!seen.insert(in).second) return ErrorAt(place, what + " lists input '" + in + "' more than once");
    auto it = by_id.find(in);
    if (it == by_id.end()) return ErrorAt(place, what + " has input '" + in + "', which is not an operator id in this job");
    const OperatorConfig& input = *it->second;
    const OperatorType& input_type = *FindOperatorType(input.type);
    if (input_type.role == OperatorRole::kSink)
      return ErrorAt(place, what + " has input '" + in + "', which is a sink (type " + input_type.name +
                                ") and emits nothing");
    if (op.Rebalanced(k)) {
      if (op.keyed() || t.keyed)
        return ErrorAt(place, what + " reads input '" + in + "' with partition: rebalance, but it is keyed (type " +
                                  t.name + (op.key_by.empty() ? "" : ", key_by " + op.KeyByText()) +
                                  "): each key must reach the subtask that owns it; a load-balanced edge hands "
                                  "every batch to whichever subtask is free. Drop partition: rebalance");
      continue;  // any parallelism on either side
    }
    if (!op.keyed() && !t.keyed && input.parallelism != op.parallelism)
      return ErrorAt(place, what + " has parallelism " + std::to_string(op.parallelism) + " but its input '" + in +
                                "' has " + std::to_string(input.parallelism) + "; add key_by or make them equal");
  }
  return Status::OK();
}

}  // namespace

Status CheckJobGraph(const JobSpec& spec, const std::vector<OperatorPlaces>& places,
                     const std::string& operators_place) {
  std::map<std::string, const OperatorConfig*> by_id;
  for (const auto& op : spec.operators) by_id[op.id] = &op;
  bool any_source = false;
  for (size_t i = 0; i < spec.operators.size(); ++i) {
    const OperatorConfig& op = spec.operators[i];
    any_source |= FindOperatorType(op.type)->role == OperatorRole::kSource;
    CAIRN_RETURN_IF_ERROR(CheckOperatorEdges(op, places[i], by_id));
  }
  if (!any_source)
    return ErrorAt(operators_place, "the job has no source operator (source types: " + SourceTypeNames() + ")");
  for (const auto& [op, k] : FeedbackInputs(spec))
    if (spec.operators[op].Rebalanced(static_cast<size_t>(k)))
      return ErrorAt(places[op].input[k], "operator '" + spec.operators[op].id + "' reads input '" +
                                              spec.operators[op].inputs[k] +
                                              "' with partition: rebalance, but that edge closes a cycle: a "
                                              "feedback edge must never block, and a load-balanced edge's queue is "
                                              "bounded. Put the load-balanced edge elsewhere on the cycle");

  // Cycles are allowed (their closing edges become feedback edges), but every operator must be
  // fed, directly or through others, by a source.
  std::map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < spec.operators.size(); ++i)
    for (const auto& in : spec.operators[i].inputs) consumers[in].push_back(i);
  std::vector<bool> reached(spec.operators.size(), false);
  std::vector<size_t> todo;
  for (size_t i = 0; i < spec.operators.size(); ++i)
    if (FindOperatorType(spec.operators[i].type)->role == OperatorRole::kSource) {
      reached[i] = true;
      todo.push_back(i);
    }
  while (!todo.empty()) {
    size_t v = todo.back();
    todo.pop_back();
    for (size_t w : consumers[spec.operators[v].id])
      if (!reached[w]) {
        reached[w] = true;
        todo.push_back(w);
      }
  }
  for (size_t i = 0; i < spec.operators.size(); ++i)
    if (!reached[i])
      return ErrorAt(places[i].op, "operator '" + spec.operators[i].id +
                                       "' is not reachable from any source (its inputs only lead back to itself)");
  return Status::OK();
}

std::set<std::pair<int, int>> FeedbackInputs(const JobSpec& spec) {
  const int n = static_cast<int>(spec.operators.size());
  std::map<std::string, int> index;
  for (int i = 0; i < n; ++i) index[spec.operators[i].id] = i;
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (const auto& in : spec.operators[i].inputs) consumers[index.at(in)].push_back(i);
  std::set<std::pair<int, int>> feedback;
  enum Color { kUnvisited, kOnPath, kDone };
  std::vector<Color> color(n, kUnvisited);
  std::function<void(int)> visit = [&](int v) {
    color[v] = kOnPath;
    for (int w : consumers[v]) {
      if (color[w] == kOnPath) {
        const auto& ins = spec.operators[w].inputs;
        for (int k = 0; k < static_cast<int>(ins.size()); ++k)
          if (ins[k] == spec.operators[v].id) feedback.insert({w, k});
      } else if (color[w] == kUnvisited) {
        visit(w);
      }
    }
    color[v] = kDone;
  };
  for (int i = 0; i < n; ++i)
    if (spec.operators[i].inputs.empty() && color[i] == kUnvisited) visit(i);
  return feedback;
}

std::vector<std::string> FindCycle(const std::vector<OperatorConfig>& ops) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i) index[ops[i].id] = i;
  std::vector<std::vector<size_t>> consumers(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    for (const auto& in : ops[i].inputs) consumers[index.at(in)].push_back(i);

  // Depth-first along the data flow; meeting an operator still on the path closes a cycle.
  enum Color { kUnvisited, kOnPath, kDone };
  std::vector<Color> color(ops.size(), kUnvisited);
  std::vector<size_t> path;
  std::vector<std::string> cycle;
  std::function<bool(size_t)> visit = [&](size_t v) {
    color[v] = kOnPath;
    path.push_back(v);
    for (size_t w : consumers[v]) {
      if (color[w] == kOnPath) {
        size_t from = 0;
        while (path[from] != w) ++from;
        for (size_t k = from; k < path.size(); ++k) cycle.push_back(ops[path[k]].id);
        cycle.push_back(ops[w].id);
        return true;
      }
      if (color[w] == kUnvisited && visit(w)) return true;
    }
    path.pop_back();
    color[v] = kDone;
    return false;
  };
  for (size_t v = 0; v < ops.size(); ++v)
    if (color[v] == kUnvisited && visit(v)) break;
  return cycle;
}

}  // namespace cairn

// The job graph checks: whether the operators of a JobSpec, with their inputs, key_by and
// parallelism, form a dataflow the runtime can execute. Part of the job loader.
//
// Contract: the spec's operators have unique ids and known types (the loader checked each
// operator on its own before); only the edges between them are checked here. Messages start
// with the place (`file:line:col` or `--set <path>`) given for the part they are about.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jobs/job_spec.h"
#include "engine/base/status.h"

namespace cairn {

// Where the parts of one operator are, for messages.
struct OperatorPlaces {
  std::string op;                  // the operator's map
  std::string inputs;              // its inputs key; `op` when it has none
  std::vector<std::string> input;  // one per entry of OperatorConfig::inputs
  std::string key_by;              // its key_by value; `op` when it has none
};

// Checks that inputs name other operators, once each; that sources have no inputs and other
// operators have some; that no operator reads from a sink; that key_by is given exactly for
// keyed types; that a forward edge (no key_by) joins
// operators of equal parallelism; that there is a source; and that every operator is reachable
// from a source. Cycles are allowed: the runtime treats their closing edges as feedback edges;
// a load-balanced edge (partition: rebalance) may not be one, nor lead into a keyed operator.
// `places` is parallel to spec.operators; `operators_place` is where the operator list is.
Status CheckJobGraph(const JobSpec& spec, const std::vector<OperatorPlaces>& places,
                     const std::string& operators_place);

// The edges that close cycles (feedback edges), as (consumer operator index, input position):
// the back edges of a depth-first walk along the data flow from the sources, in file order.
// Inputs must name operators of the spec.
std::set<std::pair<int, int>> FeedbackInputs(const JobSpec& spec);

// One cycle of the graph in data-flow order with its first operator repeated at the end
// ({"a", "b", "a"}: a feeds b, b feeds a), or empty when there is none. Inputs must name
// operators of `ops`.
std::vector<std::string> FindCycle(const std::vector<OperatorConfig>& ops);

}  // namespace cairn

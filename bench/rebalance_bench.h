// cairn-bench rebalance: a load-balanced edge against a forward one with one deliberately slow
// consumer subtask (CAIRN_SLOW_SUBTASK): the word count source (parallelism 3) -> tokenize
// (parallelism 3, subtask 1 sleeping before each batch) -> count -> discard, the tokenize input
// either `{from: source, partition: rebalance}` or the plain id (forward, chained with the
// source), in aligned and unaligned mode; lines/s of the run and the checkpoints' median
// duration (docs/benchmarks.md, "Load-balanced edges"). --slow-us 0: no slow subtask.
#pragma once

#include <string>
#include <vector>

namespace cairn {

// args: [--reps N] [--lines N] [--slow-us N] [--backpressure] [--cairn PATH] [--data-dir DIR].
// --backpressure: the stage is a throttle (100000 lines/s per subtask) into a discard sink, so
// that the queue stays full. Exit 0, 1 on a failed run, 2 on bad arguments.
int RebalanceBenchMain(const std::vector<std::string>& args);

}  // namespace cairn

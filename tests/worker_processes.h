// Test helpers for `cairn run --local-workers N` (jobs/cli/cluster.h): finding its worker
// processes, and SIGKILLing them while the job restarts in process.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn::testing {

// The `cairn worker` processes whose parent is `pid` (from /proc/<pid>/task/*/children, each
// child's argv read from /proc/<child>/cmdline). Only workers: a sanitizer build's `cairn run`
// has other children too (TSan starts llvm-symbolizer as a child process the first time it
// matches a suppression, e.g. for RocksDB when a restart reads a checkpoint).
std::set<int> WorkerProcessesOf(int pid);

// Waits (PollUntil) for `cairn run` (`pid`) to have exactly `n` worker processes, and gives
// them in `workers`; on the hang guard's timeout the failure names the workers seen and prints
// `err_file` (the run's stderr).
::testing::AssertionResult HasWorkerProcesses(int pid, size_t n, const std::string& err_file, std::set<int>* workers);

// Runs `args` (`cairn run ... --local-workers N`, with a restart strategy that allows `kills`
// restarts, a paced source, and not --quiet: the restarts are read from its notes) in
// `dir`/run.{out,err}. `kills` times, once a new checkpoint completed, one of its N worker
// processes, chosen at random, is SIGKILLed; the coordinator fails the generation, the
// supervisor starts another worker process, and the next generation is deployed from the
// latest checkpoint. Once that generation has a checkpoint too, `cairn run` itself is
// SIGKILLed (it must still be running: the pace is the caller's to choose so that it is) and
// `args` + `--restore latest` + `final_args` (e.g. the source at full speed) runs to the end,
// which must exit 0. The checkpoint directory is `dir`/ck. The caller checks the output.
void KillWorkerProcessesThenFinish(const std::vector<std::string>& args, const std::string& dir, size_t workers,
                                   int kills, const std::vector<std::string>& final_args);

}  // namespace cairn::testing

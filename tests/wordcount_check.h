// Checks shared by the end-to-end word count tests: expected counts of an input, the
// exactly-once check of a sink's committed output, and running a job under random SIGKILLs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cairn::testing {

// Word counts of `path`, split at ASCII whitespace as the tokenize operator does.
std::map<std::string, int64_t> ExpectedCounts(const std::string& path);

// Checks that the committed output in `out_dir` holds, for every word, exactly the counts 1..n
// (n from `expected`); with `at_least_once`, that every word reached a count of at least n.
void ExpectExactlyOnce(const std::string& out_dir, const std::map<std::string, int64_t>& expected,
                       bool at_least_once = false);

struct KillRun {
  int kills = 0;
  int runs = 0;
  bool completed = false;
  // `cairn checkpoints --json` lines seen after every run (completed checkpoints of each).
  std::vector<std::string> checkpoint_lines;
};

// `args` without `--restore latest` when the `--set checkpoint.dir=` it names holds no
// completed checkpoint yet (`--restore latest` then fails closed, exit 2): what an operator
// does to start a job that may or may not have run before.
std::vector<std::string> ResumeArgs(const std::vector<std::string>& args);

// How RunWithKills kills. Kills follow observed progress, never a wall-clock guess: a run to be
// killed is SIGKILLed once 1..max_new_checkpoints new completed checkpoints (chk-N/_metadata in
// checkpoint_dir) appeared since it started, after a random extra 0..max_extra_ms that only
// places the kill somewhere within the next checkpoint interval. The runs to be killed get
// `killed_run_args` (a slow source or throttle pace, so that a run cannot reach the end of its
// input before its kill however fast or slow the machine is), the last run gets
// `last_run_args` (the pace lifted, so that it finishes soon).
struct KillPlan {
  int kills = 3;
  uint32_t seed = 0;
  std::string checkpoint_dir;
  int max_new_checkpoints = 3;
  int max_extra_ms = 0;
  std::vector<std::string> killed_run_args;
  std::vector<std::string> last_run_args;
  bool list_checkpoints = false;  // fill KillRun::checkpoint_lines after every run
  std::string binary;             // the program run; empty: the cairn binary
  std::vector<std::string> env;   // added to every run's environment ("NAME=VALUE")
};

// A plan of `kills` kills after 1..3 new checkpoints each plus 0..max_extra_ms, with a random
// seed (put it in a SCOPED_TRACE): the killed runs get `--set` of each of `paced`, the last run
// each of `unpaced`.
KillPlan PacedKillPlan(int kills, const std::string& checkpoint_dir, int max_extra_ms,
                       const std::vector<std::string>& paced, const std::vector<std::string>& unpaced);

// Runs `cairn args...` `plan.kills` times, each killed as the plan says (each restores the
// previous one's latest checkpoint when args hold `--restore latest`; a run before any
// checkpoint completed starts without it, see ResumeArgs), then once more to the end. A killed
// run that ends by itself before its kill is a failure: the plan's pace was not slow enough to
// be sure of the kill.
KillRun RunWithKills(const std::vector<std::string>& args, const std::string& logs, const KillPlan& plan);

// The largest id of a completed checkpoint (chk-<id> with a _metadata file) in `dir`; 0 if none.
uint64_t NewestCompletedCheckpoint(const std::string& dir);

}  // namespace cairn::testing

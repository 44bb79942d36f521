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

// Runs `cairn args...` until it completes (each run through ResumeArgs), SIGKILLing it after a random delay in
// [min_delay_ms, max_delay_ms] up to `max_kills` times. When `checkpoint_dir` is not empty,
// lists its checkpoints after every run.
KillRun RunWithKills(const std::vector<std::string>& args, const std::string& logs, int max_kills, uint32_t seed,
                     int min_delay_ms, int max_delay_ms, const std::string& checkpoint_dir = "");

}  // namespace cairn::testing

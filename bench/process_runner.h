// ProcessRunner runs one benchmark configuration as a child process (fork + exec), so that its
// peak memory is its own (wait4's ru_maxrss) and a crash cannot take the harness down.
//
// Contract: RunChild blocks until the child exits. The child's stdout is collected whole; its
// stderr is split into lines, each stamped with the wall-clock time at which it arrived (the
// engine's progress lines are written unbuffered, so arrival is when they were printed). Not
// thread-safe with other fork()s in the same process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace cairn {

struct TimedLine {
  int64_t wall_ms = 0;   // system_clock, ms since the epoch (comparable to checkpoint trigger times)
  double seconds = 0;    // since the fork
  std::string text;      // without the newline
};

struct ChildResult {
  int exit_code = -1;        // -1 when killed by a signal
  int term_signal = 0;       // the signal, when killed
  bool timed_out = false;    // killed (SIGKILL) for running longer than the timeout
  double wall_seconds = 0;   // fork to reaped exit
  int64_t start_wall_ms = 0; // system_clock at the fork
  int64_t max_rss_kb = 0;    // peak resident set of the child
  double user_seconds = 0;
  double sys_seconds = 0;
  std::string out;           // stdout
  std::vector<TimedLine> err_lines;  // stderr, line by line

  bool ok() const { return exit_code == 0; }
  // "exit 1" or "killed by signal 9", with the last stderr lines.
  std::string Describe() const;
};

// Runs argv[0] (a path) with the arguments argv[1..], killing it with SIGKILL once it has run
// for `timeout_seconds`. An error only when the child could not be started or reaped; a
// failing child is a ChildResult with exit_code != 0.
Status RunChild(const std::vector<std::string>& argv, ChildResult* result, double timeout_seconds = 600);

// The directory of the running benchmark binary (where `cairn` and bench-data/ are by default).
std::string BenchBinaryDir();

// A subcommand's scratch directory `<data_dir>/<name>-scratch` (emptied; data_dir "" is
// BenchBinaryDir()/bench-data) holding `lines.txt`, `lines` generated lines of 10 words (seed
// 42) by `cairn generate`; an error naming what failed.
Status PrepareScratchCorpus(const std::string& cairn, std::string data_dir, const std::string& name, int64_t lines,
                            std::string* scratch, std::string* corpus);

}  // namespace cairn

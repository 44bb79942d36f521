// The progress line `cairn run` prints on stderr once per --progress-interval while a job runs:
// seconds since processing started, source and sink records so far, the sink rate over the
// last interval in millions of records per second, and the checkpoints completed so far with
// the duration of the last (-1 before the first):
//
//   cairn:    2.0s  source records      1200000  sink records       950000  (0.48M/s)  checkpoints 3 (last 41 ms)
//
// Contract: the format is stable; tools read it (bench/cairn_bench.cc parses the seconds and
// the sink records).
#pragma once

#include <string>

#include "engine/runtime/job_runner.h"

namespace cairn {

// The line for `p`, ending in a newline.
std::string FormatProgress(const RunProgress& p);

// Writes FormatProgress(p) to stderr: RunOptions::progress for `cairn run` without --quiet.
void PrintProgress(const RunProgress& p);

}  // namespace cairn

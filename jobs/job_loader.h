// The job loader turns a YAML job file plus `--set KEY=VALUE` overrides into a validated JobSpec.
//
// Contract: every problem is an InvalidArgument (or NotFound for a missing file) whose message
// starts with where it is: "<file>:<line>:<col>: " for a YAML node (1-based, as editors count),
// "--set <key>: " for an override, "<file>: " for the file as a whole; and then says what is
// wrong and, where it helps, what would be right (e.g. the known keys). Unknown keys are errors.
// Loading reads the file and nothing else: no directory is created, no checkpoint is touched.
#pragma once

#include <string>
#include <vector>

#include "jobs/job_spec.h"
#include "engine/base/status.h"

namespace cairn {

// `overrides` are "dotted.path=value" strings, as given to --set; operators are addressed by
// id (operators.<id>.<key>), the checkpoint by checkpoint.<key>.
Status LoadJob(const std::string& path, const std::vector<std::string>& overrides, JobSpec* out);
// The same from YAML text; `name` stands for the file in messages.
Status LoadJobFromString(const std::string& yaml, const std::string& name,
                         const std::vector<std::string>& overrides, JobSpec* out);

// Parses "250ms", "1s", "2m", "1h", or a bare number of milliseconds. False when malformed.
bool ParseDuration(const std::string& text, Millis* out);
// A size in bytes: an integer, optionally followed by B, KB, MB or GB (powers of 1024; KiB,
// MiB, GiB too), e.g. 64MB. False when malformed or larger than 2^62.
bool ParseBytes(const std::string& text, uint64_t* out);

}  // namespace cairn

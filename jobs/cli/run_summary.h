// The summary `cairn run` prints when a job ends: its records, rates, checkpoints and (for
// jobs with keyed state) the largest keys.
#pragma once

#include <string>

#include "engine/runtime/job_runner.h"
#include "jobs/job_spec.h"

namespace cairn {

std::string FormatSummary(const JobSpec& spec, const RunSummary& s);

}  // namespace cairn

// Schema derivation: what every operator of a job emits, derived from its sources through its
// edges when the job loads, so that every edge has a schema before anything runs. Part of the
// job loader, after the graph checks (jobs/job_graph.h).
//
// Contract: `spec` passed CheckJobGraph. Fills spec->schemas (parallel to spec->operators; null
// for sinks). Each operator's schema comes from OperatorType::output_schema given its inputs'
// schemas; on a cycle, an operator is first derived without its feedback inputs, then checked
// again with them. Also checks that every key_by field is in every input, with one type. An
// error is InvalidArgument starting with the place it is about.
#pragma once

#include <vector>

#include "engine/base/status.h"
#include "jobs/job_graph.h"
#include "jobs/job_spec.h"

namespace cairn {

Status DeriveSchemas(JobSpec* spec, const std::vector<OperatorPlaces>& places);

}  // namespace cairn

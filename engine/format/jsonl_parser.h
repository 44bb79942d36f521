// The jsonl RecordParser (engine/format/record_parser.h), on simdjson's DOM API, which picks
// the fastest kernel for the CPU at run time (Debian's On-Demand API is built for the baseline
// x86-64 and would run its portable fallback). Kept apart so that only jsonl_parser.cc includes
// simdjson. A line is fully validated: trailing content after the object is an error.
//
// Contract: as RecordParser. A record is copied into a padded buffer the parser owns (simdjson
// reads up to SIMDJSON_PADDING bytes past the end), which grows to the longest line and is
// then reused.
#pragma once

#include <memory>

#include "engine/dataflow/schema.h"
#include "engine/format/record_parser.h"

namespace cairn {

std::unique_ptr<RecordParser> NewJsonlParser(SchemaRef schema);

}  // namespace cairn

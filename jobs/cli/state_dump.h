// `cairn state dump`: every keyed-state entry, every list-state item and every in-flight record
// of a checkpoint.
#pragma once

#include <cstdio>
#include <string>

#include "engine/base/status.h"

namespace cairn {

// Writes the state of the checkpoint at `path` (a chk-<id> directory or its _metadata) to
// `out`, one entry per line: JSON objects with `json`, tab-separated fields otherwise. Only
// operator `op` when it is not empty. Reads the checkpoint and changes nothing.
Status DumpCheckpointState(const std::string& path, const std::string& op, bool json, FILE* out);

// A JSON string literal for bytes (AppendJsonString: escapes, and bytes that are not UTF-8 as
// \u00XX), so that every line of `--json` output is valid JSON.
std::string JsonQuote(std::string_view s);

}  // namespace cairn

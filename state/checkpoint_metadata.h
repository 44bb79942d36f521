// CheckpointMetadata describes one completed checkpoint: its statistics and where every
// subtask's state lies. Writing its _metadata file is what commits the checkpoint.
//
// Contract: WriteMetadata is atomic (a reader sees the old state or the whole new file, also
// after a crash). ReadMetadata never crashes on bad bytes: an empty, truncated or bit-flipped
// file is Corruption("<path>: damaged ..."), a file of another format version is
// Corruption("<path>: incompatible format version N ..."), a foreign file is
// Corruption("<path>: not a Cairn checkpoint ..."), a missing one NotFound. Field errors are
// Corruption("<path>: damaged (line K: ...)"): the format is ours, so unknown fields, missing
// fields, bad numbers and state paths outside the checkpoint directory are all rejected.
// Strings are percent-encoded in the file (see docs/checkpoints.md), so any bytes round-trip.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/base/status.h"
#include "engine/base/ids.h"

namespace cairn {

struct SubtaskStateHandle {
  std::string operator_id;
  // The operator's type (`type:` in the job), so that `cairn state dump` can have it decode its
  // operator state; "" in checkpoints taken before Cairn recorded it (optional attribute).
  std::string operator_type;
  uint32_t subtask = 0;
  uint32_t parallelism = 1;
  KeyGroupRange key_groups;
  std::string keyed_dir;            // relative to the checkpoint dir; "" when not keyed
  std::string operator_state_file;  // relative to the checkpoint dir; "" when none
  std::string list_state_file;      // relative; the operator's list states, "" when none (optional attribute)
  std::string channel_state_file;   // relative; in-flight records of the input channels, "" when none
  // State smaller than checkpoint.inline_state_threshold kept in _metadata itself instead of a
  // file of its own (as Flink's state.storage.fs.memory-threshold): the bytes a file would hold
  // (without its footer; _metadata's checksum covers them). Each is "" when not inline, and at
  // most one of a kind's file and inline bytes is set (optional attributes).
  std::string operator_state_inline;
  std::string list_state_inline;
  std::string channel_state_inline;
  uint64_t state_bytes = 0;         // keyed + operator state + list state
  uint64_t channel_state_bytes = 0;
  int64_t alignment_ms = 0;
  int64_t sync_ms = 0;
  int64_t async_ms = 0;
  // Malformed input records the operator skipped since the job first started (a file_source
  // with on_error: skip); -1 for an operator that skips none (the attribute is then absent).
  int64_t records_skipped = -1;
  // Late records the operator dropped since the job first started (a window); -1 for an
  // operator that drops none (the attribute is then absent).
  int64_t records_late = -1;
};

struct CheckpointMetadata {
  CheckpointId id = 0;
  std::string job_name;
  int64_t trigger_time_ms = 0;  // Unix epoch milliseconds
  int64_t duration_ms = 0;      // trigger to completion
  std::string mode;             // "aligned", "unaligned", "aligned->unaligned" (switched by
                                // checkpoint.aligned_timeout at some task), "at_least_once"
  uint32_t max_parallelism = 128;
  uint64_t state_bytes = 0;
  uint64_t channel_state_bytes = 0;
  int64_t alignment_ms = 0;     // longest of any task
  int64_t sync_ms = 0;          // longest of any task
  int64_t async_ms = 0;         // longest of any task
  bool sources_finished = false;  // every source had read all its input (a final checkpoint)
  // "checkpoint" or "savepoint" (a self-contained copy the user owns, state/savepoint.h); the
  // field `kind` is written only for savepoints, so older _metadata files read as checkpoints.
  std::string kind = "checkpoint";
  std::vector<SubtaskStateHandle> subtasks;
};

std::string EncodeMetadata(const CheckpointMetadata& m);
// `path` is only used in error messages. *m is set only on success.
Status DecodeMetadata(const std::string& path, const std::string& bytes, CheckpointMetadata* m);

// Writes <chk_dir>/_metadata atomically (tmp, fsync, rename, fsync dir), then fsyncs the
// parent of chk_dir so that the chk-<id> entry is durable too. The caller writes and syncs
// all state files first: this call is the commit point of the checkpoint.
Status WriteMetadata(const std::string& chk_dir, const CheckpointMetadata& m);
// Reads <chk_dir>/_metadata; NotFound("<path>: no such file") when it is missing.
Status ReadMetadata(const std::string& chk_dir, CheckpointMetadata* m);

// The percent-encoding _metadata writes strings in (docs/checkpoints.md): any bytes as printable
// ASCII without ' ', '=' or '%' ("" as "-"). Unescape returns false on a malformed string.
std::string EscapeMetadataString(std::string_view s);
bool UnescapeMetadataString(std::string_view s, std::string* out);

// The bytes of one kind of a subtask's state (operator, list or channel state) in the
// checkpoint `chk_dir`: read from `file` (a path _metadata records; ReadChecksummedFile's
// errors) when set, else `in_line` (kept in _metadata). "" when the subtask has none.
Status ReadSubtaskState(const std::string& chk_dir, const std::string& file, const std::string& in_line,
                        std::string* out);
// Where that state is, for messages: <chk_dir>/<file>, or <chk_dir>/_metadata when it is inline.
std::string SubtaskStatePath(const std::string& chk_dir, const std::string& file);
// Bytes of it that do not decode: "<SubtaskStatePath>: damaged (<what> <fails>)", the subtask
// named (`<what> of <op>-<i>`) when inline, e.g. "... (list state of tally-1 does not parse)".
std::string SubtaskStateDamaged(const std::string& chk_dir, const SubtaskStateHandle& h, const std::string& file,
                                std::string_view what, std::string_view fails);

}  // namespace cairn

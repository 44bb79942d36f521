// CheckpointConfig is the `checkpoint:` section of a job: how often and how checkpoints are
// taken, where they go, and when failures fail the job. Every key and its default is
// documented in docs/configuration.md; jobs/job_loader.cc validates the ranges.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "engine/dataflow/stream_element.h"

namespace cairn {

using Millis = std::chrono::milliseconds;

struct CheckpointConfig {
  Millis interval{1000};             // 0: no periodic checkpoints (the final one still happens)
  CheckpointMode mode = CheckpointMode::kAligned;
  std::string dir = "checkpoints";
  std::string savepoint_dir;         // default target of savepoints; "": <dir>/savepoints
  Millis timeout{600000};            // a pending checkpoint older than this is aborted
  Millis min_pause{0};               // from the end of one checkpoint to the next trigger
  uint32_t max_concurrent = 1;       // pending checkpoints at once, >= 1
  uint32_t tolerable_failures = 0;   // consecutive failed checkpoints before the job fails
  uint32_t retain = 3;               // completed checkpoints kept, >= 1
  Millis aligned_timeout{0};         // 0: never switch an aligned checkpoint to unaligned
  uint32_t history = 10;             // completed checkpoints whose durations the statistics keep, >= 1
  uint64_t max_feedback_backlog = 1000000;  // records queued on one feedback channel before the job fails, >= 1
  uint32_t max_drain_checkpoints = 20;      // final checkpoints with records in flight before the job fails, >= 1
  // A subtask's operator, list or channel state smaller than this many bytes is kept in
  // _metadata instead of a file of its own (Flink's state.storage.fs.memory-threshold); 0: never.
  uint64_t inline_state_threshold = 1024;
};

}  // namespace cairn

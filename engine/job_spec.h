// JobSpec is a validated job description: the operators, their edges and parameters, and the
// checkpoint configuration. jobs/job_loader.h builds it from YAML; the runtime reads it only.
//
// Contract: a JobSpec returned by the loader is valid: ids unique, inputs name existing
// operators, parameters present with the declared types (defaults filled in), durations and
// counts in range. Every key and its default is documented in docs/configuration.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/stream_element.h"

namespace cairn {

using Millis = std::chrono::milliseconds;

struct CheckpointConfig {
  Millis interval{1000};             // 0: no periodic checkpoints (the final one still happens)
  CheckpointMode mode = CheckpointMode::kAligned;
  std::string dir = "checkpoints";
  Millis timeout{600000};            // a pending checkpoint older than this is aborted
  Millis min_pause{0};               // from the end of one checkpoint to the next trigger
  uint32_t max_concurrent = 1;       // pending checkpoints at once, >= 1
  uint32_t tolerable_failures = 0;   // consecutive failed checkpoints before the job fails
  uint32_t retain = 3;               // completed checkpoints kept, >= 1
  Millis aligned_timeout{0};         // 0: never switch an aligned checkpoint to unaligned
  uint32_t history = 10;             // completed checkpoints whose durations the statistics keep, >= 1
  uint64_t max_feedback_backlog = 1000000;  // records queued on one feedback channel before the job fails, >= 1
  uint32_t max_drain_checkpoints = 20;      // final checkpoints with records in flight before the job fails, >= 1
};

// One operator's parameters after validation: every declared parameter has a value of its
// declared type (the YAML value or the default), stored as text and parsed by the getters.
struct OperatorConfig {
  std::string id;
  std::string type;
  uint32_t parallelism = 1;
  std::vector<std::string> inputs;  // operator ids; empty for sources
  std::string key_by;               // non-empty: the input edges are hash-partitioned by key
  std::map<std::string, std::string> params;
  std::string location;             // "file:line:col" of the operator in the YAML, for messages

  const std::string& GetString(const std::string& name) const;
  int64_t GetInt(const std::string& name) const;
  double GetDouble(const std::string& name) const;
  Millis GetDuration(const std::string& name) const;
  bool GetBool(const std::string& name) const;
};

struct JobSpec {
  std::string name;
  std::string source_file;         // the YAML file it came from
  uint32_t max_parallelism = 128;  // number of key groups
  uint32_t parallelism = 1;        // default for operators that do not set one
  CheckpointConfig checkpoint;
  std::vector<OperatorConfig> operators;  // in file order

  const OperatorConfig* Find(const std::string& id) const;
};

}  // namespace cairn

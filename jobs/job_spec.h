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

#include "engine/checkpoint/checkpoint_config.h"
#include "state/state_backend.h"

namespace cairn {

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
  StateBackendOptions state;       // the `state:` section (shared_dir is set by the runner)
  std::vector<OperatorConfig> operators;  // in file order

  const OperatorConfig* Find(const std::string& id) const;
};

}  // namespace cairn

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
#include "engine/dataflow/schema.h"
#include "state/state_backend.h"

namespace cairn {

// One entry of a map or list parameter, in YAML order: its key (empty in a list), its value as
// text, and where the value is ("file:line:col" or "--set <path>"), for messages about it.
struct ParamEntry {
  std::string key;
  std::string value;
  std::string location;
};

// A source's `watermark:` map (docs/configuration.md, "Event time"): the source task emits
// watermarks from the event times in `field` (timestamp or int64 ms), max_out_of_orderness
// behind the largest seen, and marks itself idle after idle_timeout without records (0: never).
struct WatermarkSpec {
  bool enabled = false;                     // the key was given
  std::string field;
  Millis max_out_of_orderness{0};
  Millis idle_timeout{0};
  std::string field_location;               // where `field` is, for messages
};

// One operator's parameters after validation: every declared parameter has a value of its
// declared type (the YAML value or the default). Scalars are stored as text and parsed by the
// getters; map and list parameters are kept as entries in YAML order.
struct OperatorConfig {
  std::string id;
  std::string type;
  uint32_t parallelism = 1;
  std::vector<std::string> inputs;  // operator ids; empty for sources
  // Parallel to inputs (or empty: none): the input is a load-balanced edge (`{from: ID,
  // partition: rebalance}`): every producer subtask feeds one shared queue of this operator.
  std::vector<bool> rebalance_inputs;
  std::vector<std::string> key_by;  // field names; non-empty: the input edges are hash-partitioned by them
  // Per input, for types whose inputs are keyed by different fields (join's `on`, set by
  // OperatorType::input_keys); empty: every input is keyed by key_by.
  std::vector<std::vector<std::string>> input_key_by;
  WatermarkSpec watermark;          // sources only: `watermark:` (not enabled: no watermarks but the final one)
  std::map<std::string, std::string> params;                // scalar parameters
  std::map<std::string, std::vector<ParamEntry>> entries;   // map and list parameters
  std::map<std::string, std::string> places;  // where each parameter given in the YAML is
  std::string location;             // "file:line:col" of the operator in the YAML, for messages

  const std::string& GetString(const std::string& name) const;
  int64_t GetInt(const std::string& name) const;
  double GetDouble(const std::string& name) const;
  Millis GetDuration(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  // The entries of a map or list parameter (empty when it was not given).
  const std::vector<ParamEntry>& GetEntries(const std::string& name) const;
  // Where parameter `name`'s value is in the YAML, or where the operator is when not given.
  const std::string& Where(const std::string& name) const;
  // "a, b": key_by for messages.
  std::string KeyByText() const;
  // The fields input `input` is hash-partitioned by (empty: it is not).
  const std::vector<std::string>& KeyByOf(size_t input) const {
    return input_key_by.empty() ? key_by : input_key_by[input];
  }
  bool Rebalanced(size_t input) const { return input < rebalance_inputs.size() && rebalance_inputs[input]; }
  // Its inputs are hash-partitioned (key_by or input_key_by).
  bool keyed() const { return !key_by.empty() || !input_key_by.empty(); }
};

// The `restart:` section: what the job does when a task fails (docs/configuration.md).
struct RestartConfig {
  enum class Strategy { kNone, kFixedDelay, kExponentialDelay } strategy = Strategy::kNone;
  uint32_t attempts = 3;                              // restarts before the failure stands
  std::chrono::milliseconds delay{1000};              // before the first restart
  std::chrono::milliseconds max_delay{300000};        // exponential_delay: the longest wait
};

struct JobSpec {
  std::string name;
  std::string source_file;         // the YAML file it came from
  uint32_t max_parallelism = 128;  // number of key groups
  uint32_t parallelism = 1;        // default for operators that do not set one
  CheckpointConfig checkpoint;
  RestartConfig restart;
  StateBackendOptions state;       // the `state:` section (shared_dir is set by the runner)
  std::vector<OperatorConfig> operators;  // in file order
  // What each operator emits (parallel to operators; null for sinks), derived by the loader
  // (jobs/schema_derivation.h).
  std::vector<SchemaRef> schemas;

  const OperatorConfig* Find(const std::string& id) const;
};

}  // namespace cairn

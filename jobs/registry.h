// The operator registry: every operator type a job may name, with its parameters (type,
// default, documentation), its role, the schema of what it emits, and its factory. Each
// operator registers itself beside its own code (CAIRN_REGISTER_OPERATOR in operators/*.cc).
//
// Contract: types register during static initialisation, before main(); after that the table
// is immutable and listed by name. The job loader validates YAML against it and
// docs/configuration.md documents the same table. `create` is only called with an
// OperatorConfig the loader validated against the type.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/job_spec.h"
#include "engine/dataflow/operator.h"
#include "state/operator_state_redistribution.h"

namespace cairn {

enum class ParamType { kString, kInt, kDouble, kDuration, kBool };
const char* ParamTypeName(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type;
  std::string default_value;  // used when absent; ignored when required
  bool required = false;
  int64_t min_int = 0;        // for kInt: smallest allowed value
  std::string doc;
};

enum class OperatorRole { kSource, kTransform, kSink };

struct OperatorType {
  std::string name;
  OperatorRole role;
  bool keyed = false;  // needs key_by, gets keyed state
  Schema output;       // empty key for sinks
  std::vector<ParamSpec> params;
  std::string doc;
  std::function<std::unique_ptr<Operator>(const OperatorConfig&)> create;
  bool chain_head = false;  // always starts its own chain (its Admit paces the whole task)
  // How its operator state is redistributed when a restore changes its parallelism
  // (docs/state.md, "Rescaling"); kNone: it keeps no operator state.
  OperatorStateRule state;

  // Optional, for sinks that commit output files; the runner calls them before anything on
  // disk changes (jobs that restore, or start with --fresh, or must not start at all).
  // preflight: the sink's output place is usable; InvalidArgument naming it if not.
  std::function<Status(const OperatorConfig&)> preflight;
  // committed_output: the committed output files already there (none when there is no place).
  std::function<Status(const OperatorConfig&, std::vector<std::string>* files)> committed_output;
  // set_aside_output: `--fresh`: moves the committed output aside, never replacing a file,
  // and deletes uncommitted files; *moved counts the files set aside.
  std::function<Status(const OperatorConfig&, size_t* moved)> set_aside_output;

  const ParamSpec* FindParam(std::string_view name) const;
};

// Every registered type, by name.
const std::vector<OperatorType>& OperatorTypes();
const OperatorType* FindOperatorType(std::string_view name);

// Adds `type` to the registry; a second type of the same name aborts the program. Returns
// true, so that a registration can initialise a static (CAIRN_REGISTER_OPERATOR).
bool RegisterOperatorType(OperatorType type);

}  // namespace cairn

// Registers the OperatorType that `make` (a function taking nothing) returns, when the
// program starts. Put it in the operator's own .cc file, after the operator's code.
#define CAIRN_REGISTER_OPERATOR(make) \
  [[maybe_unused]] static const bool cairn_registered_##make = ::cairn::RegisterOperatorType(make())

namespace cairn {

}  // namespace cairn

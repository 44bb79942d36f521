// The operator registry: every operator type a job may name, with its parameters (type,
// default, documentation), its role, the schema of what it emits, and its factory.
//
// Contract: the table is built once and immutable; the job loader validates YAML against it
// and docs/configuration.md documents the same table. Create() is only called with an
// OperatorConfig the loader validated against the type.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/job_spec.h"
#include "engine/operator.h"
#include "engine/state_redistribution.h"

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

  const ParamSpec* FindParam(std::string_view name) const;
};

const std::vector<OperatorType>& OperatorTypes();
const OperatorType* FindOperatorType(std::string_view name);

}  // namespace cairn

// The operator registry: every operator type a job may name, with its parameters (type,
// default, documentation), its role, the schema of what it emits, and its factory. Each
// operator registers itself beside its own code, so adding an operator is one file in
// operators/ (CMake globs the folder) with one registration at its end:
//
//   CAIRN_REGISTER_OPERATOR({
//       .name = "at_least",
//       .role = OperatorRole::kTransform,
//       .params = {{.name = "min", .type = ParamType::kInt, .required = true, .doc = "..."}},
//       .doc = "Passes on the records whose value is at least `min`.",
//       .create = MakeOperator<AtLeast>,
//   });
//
// docs/architecture.md ("Writing an operator") shows such an operator whole.
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
#include <type_traits>
#include <vector>

#include "jobs/job_spec.h"
#include "engine/dataflow/operator.h"
#include "state/operator_state_redistribution.h"

namespace cairn {

// kMap: a YAML map of scalars (OperatorConfig::GetEntries, in YAML order); kList: a scalar or a
// list of scalars (entries with empty keys); kMapOfLists: a map whose values are each a scalar or
// a list of scalars (one entry per value, keyed by its map key, in YAML order).
enum class ParamType { kString, kInt, kDouble, kDuration, kBool, kMap, kList, kMapOfLists };
const char* ParamTypeName(ParamType t);

// One parameter of an operator type: the YAML key `name` of the operator's entry.
struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::string default_value;  // used when absent; ignored when required
  bool required = false;
  int64_t min_int = 0;        // for kInt: smallest allowed value
  std::string doc;
};

enum class OperatorRole { kSource, kTransform, kSink };

// An operator type, built with designated initialisers (in member order); name and create are
// required, the rest have defaults.
struct OperatorType {
  std::string name;
  OperatorRole role = OperatorRole::kTransform;
  bool keyed = false;  // needs key_by (or input_keys), gets keyed state
  // Optional, for keyed types whose inputs are keyed by different fields (join): sets
  // config->input_key_by (one list per input, of equal lengths) from its parameters once they are
  // read; InvalidArgument at config->Where(param) when they do not fit. key_by is then refused.
  std::function<Status(OperatorConfig* config)> input_keys;
  // Keyed, but key_by may be left out: every record then has the one empty key, so all of them
  // reach one subtask (the input edge is a hash edge either way).
  bool key_by_optional = false;
  // Keyed, with a TimerService (OperatorContext::timers): event- and processing-time timers per
  // key, stored in its keyed state (engine/dataflow/timer_service.h).
  bool timers = false;
  // The schema of the records it emits, from its config and the schemas of its inputs (in the
  // order of OperatorConfig::inputs; an input on a feedback edge not derived yet is null).
  // Errors are InvalidArgument starting with the place they are about (config.Where(param)).
  // Unset: a sink emits nothing; a transform emits what it reads, and all its inputs must have
  // one schema. FixedSchema() makes one that ignores the inputs.
  std::function<Status(const OperatorConfig& config, const std::vector<SchemaRef>& inputs, SchemaRef* out)>
      output_schema;
  std::vector<ParamSpec> params;
  std::string doc;     // one paragraph for docs/configuration.md
  std::function<std::unique_ptr<Operator>(const OperatorConfig&)> create;
  // Always starts its own chain (a FlowControlled operator, whose Admit then paces the whole
  // task).
  bool chain_head = false;
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

  // Optional, for types that keep operator state (OperatorSnapshot::operator_state): those
  // bytes as one line of text for `cairn state dump` (e.g. a sink's pending files); false when
  // they do not decode (the dump then shows the bytes).
  std::function<bool(std::string_view bytes, std::string* text)> describe_state;

  const ParamSpec* FindParam(std::string_view name) const;
};

// An OperatorType::output_schema that always gives `fields`.
std::function<Status(const OperatorConfig&, const std::vector<SchemaRef>&, SchemaRef*)> FixedSchema(
    std::vector<Field> fields);

// For an output_schema rule that reads every input alike: the one schema all of `inputs` carry
// (inputs not derived yet, null, are left out). InvalidArgument naming two inputs that differ
// (`why`: what makes one schema necessary, e.g. "emits what it reads"), or none derived.
Status CommonInputSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, const std::string& why,
                         SchemaRef* out);

// Every registered type, by name.
const std::vector<OperatorType>& OperatorTypes();
const OperatorType* FindOperatorType(std::string_view name);

// Adds `type` to the registry; a type without a name or a factory, or a second type of the
// same name, aborts the program. Returns true, so that a registration can initialise a static
// (CAIRN_REGISTER_OPERATOR).
bool RegisterOperatorType(OperatorType type);

// A factory for OperatorType::create: a T made from the operator's validated config, or with
// no arguments when T has no constructor taking one.
template <typename T>
std::unique_ptr<Operator> MakeOperator(const OperatorConfig& config) {
  if constexpr (std::is_constructible_v<T, const OperatorConfig&>) {
    return std::make_unique<T>(config);
  } else {
    return std::make_unique<T>();
  }
}

}  // namespace cairn

// Registers an operator type when the program starts; the argument is the braced initialiser
// of an OperatorType. Put it in the operator's own .cc file, after the operator's code. Members
// left out of the initialiser take their defaults (without -Wmissing-field-initializers noise).
#define CAIRN_REGISTER_OPERATOR(...)                                                           \
  _Pragma("GCC diagnostic push")                                                               \
  _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")                           \
  [[maybe_unused]] static const bool CAIRN_REGISTRY_CONCAT(cairn_registered_, __COUNTER__) =    \
      ::cairn::RegisterOperatorType(::cairn::OperatorType __VA_ARGS__);                        \
  _Pragma("GCC diagnostic pop")                                                                \
  static_assert(true, "the registration ends with a semicolon")
#define CAIRN_REGISTRY_CONCAT(a, b) CAIRN_REGISTRY_CONCAT_INNER(a, b)
#define CAIRN_REGISTRY_CONCAT_INNER(a, b) a##b

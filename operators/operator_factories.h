// Factories of the built-in operators, one per operator type in operators/registry.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/job_spec.h"
#include "engine/operator.h"
#include "engine/state_redistribution.h"

namespace cairn {

std::unique_ptr<Operator> NewFileSource(const OperatorConfig& c);
std::unique_ptr<Operator> NewGeneratorSource(const OperatorConfig& c);
std::unique_ptr<Operator> NewTokenize(const OperatorConfig& c);
std::unique_ptr<Operator> NewCount(const OperatorConfig& c);
std::unique_ptr<Operator> NewFileSink(const OperatorConfig& c);
std::unique_ptr<Operator> NewDiscardSink(const OperatorConfig& c);
std::unique_ptr<Operator> NewThrottle(const OperatorConfig& c);
std::unique_ptr<Operator> NewBankRequests(const OperatorConfig& c);
std::unique_ptr<Operator> NewBankAccounts(const OperatorConfig& c);

// How the operator state of each stateful type is redistributed when its parallelism changes
// at a restore (docs/state.md, "Rescaling").
OperatorStateRule FileSourceStateRule();   // split: the byte ranges still to read
OperatorStateRule StridedSourceStateRule();  // split: generator, bank_requests (operators/strided_position.h)
OperatorStateRule FileSinkStateRule();     // split: the writers whose files must be committed

// file_sink checks for the runner, which calls them before anything on disk changes.
// Preflight: `path` can be a sink directory (every existing prefix is a directory, the first
// missing one can be created, an existing one is writable); InvalidArgument naming it if not.
Status FileSinkPreflight(const OperatorConfig& c);
// The committed output files (`part-*`) in `path`; none when it does not exist.
Status FileSinkCommittedOutput(const OperatorConfig& c, std::vector<std::string>* files);
// `--fresh`: moves the committed output into `path`/_superseded/ (never replacing a file there)
// and deletes in-progress files; *moved counts the files set aside.
Status FileSinkSetAsideOutput(const OperatorConfig& c, size_t* moved);

}  // namespace cairn

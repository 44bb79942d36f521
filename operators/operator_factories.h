// Factories of the built-in operators, one per operator type in operators/registry.cc.
#pragma once

#include <memory>

#include "engine/job_spec.h"
#include "engine/operator.h"

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

}  // namespace cairn

#include "jobs/job_spec.h"

#include <cstdlib>
#include <stdexcept>

#include "jobs/job_loader.h"

namespace cairn {

// The loader validated every parameter against its declared type, so a failure here is a bug
// in the caller (asking for an undeclared parameter or the wrong type), not bad input.
static const std::string& ParamOrDie(const OperatorConfig& c, const std::string& name) {
  auto it = c.params.find(name);
  if (it == c.params.end()) throw std::logic_error("operator " + c.id + " has no parameter " + name);
  return it->second;
}

const std::string& OperatorConfig::GetString(const std::string& name) const { return ParamOrDie(*this, name); }

int64_t OperatorConfig::GetInt(const std::string& name) const {
  return std::strtoll(ParamOrDie(*this, name).c_str(), nullptr, 10);
}

double OperatorConfig::GetDouble(const std::string& name) const {
  return std::strtod(ParamOrDie(*this, name).c_str(), nullptr);
}

Millis OperatorConfig::GetDuration(const std::string& name) const {
  Millis d{0};
  if (!ParseDuration(ParamOrDie(*this, name), &d)) throw std::logic_error("bad duration in " + id + "." + name);
  return d;
}

bool OperatorConfig::GetBool(const std::string& name) const {
  const std::string& v = ParamOrDie(*this, name);
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

const std::vector<ParamEntry>& OperatorConfig::GetEntries(const std::string& name) const {
  static const std::vector<ParamEntry> kNone;
  auto it = entries.find(name);
  return it == entries.end() ? kNone : it->second;
}

const std::string& OperatorConfig::Where(const std::string& name) const {
  auto it = places.find(name);
  return it == places.end() ? location : it->second;
}

std::string OperatorConfig::KeyByText() const {
  std::string s;
  for (const auto& k : key_by) s += (s.empty() ? "" : ", ") + k;
  return s;
}

const OperatorConfig* JobSpec::Find(const std::string& id) const {
  for (const auto& op : operators)
    if (op.id == id) return &op;
  return nullptr;
}

const char* CheckpointModeName(CheckpointMode m) {
  switch (m) {
    case CheckpointMode::kAligned: return "aligned";
    case CheckpointMode::kUnaligned: return "unaligned";
    case CheckpointMode::kAtLeastOnce: return "at_least_once";
  }
  return "?";
}

}  // namespace cairn

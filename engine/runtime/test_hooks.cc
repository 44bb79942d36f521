#include "engine/runtime/test_hooks.h"

#include <algorithm>
#include <cstdlib>

namespace cairn {

namespace {

Status ParseSlowSubtask(const JobSpec& spec, TestHooks* h) {
  const char* env = getenv("CAIRN_SLOW_SUBTASK");
  if (env == nullptr || *env == '\0') return Status::OK();
  const std::string v = env;
  const auto bad = [&v](const std::string& why) {
    return Status::InvalidArgument("CAIRN_SLOW_SUBTASK=" + v + ": " + why +
                                   " (expected <operator>:<subtask>:<microseconds per batch>, docs/faults.md)");
  };
  const size_t a = v.find(':');
  const size_t b = a == std::string::npos ? a : v.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos || a == 0) return bad("three fields are needed");
  const std::string op = v.substr(0, a);
  const OperatorConfig* oc = spec.Find(op);
  if (oc == nullptr) return bad("the job has no operator '" + op + "'");
  char* end = nullptr;
  const std::string st = v.substr(a + 1, b - a - 1), micros = v.substr(b + 1);
  const unsigned long n = std::strtoul(st.c_str(), &end, 10);
  if (st.empty() || *end != '\0' || n >= oc->parallelism) return bad("'" + st + "' is not a subtask of '" + op + "'");
  const long long u = std::strtoll(micros.c_str(), &end, 10);
  if (micros.empty() || *end != '\0' || u <= 0) return bad("'" + micros + "' is not a number of microseconds > 0");
  h->slow_op = op;
  h->slow_subtask = static_cast<uint32_t>(n);
  h->slow_us = u;
  return Status::OK();
}

Status ParseInjectedFailures(const JobSpec& spec, TestHooks* h) {
  const char* env = getenv("CAIRN_INJECT_FAILURE");
  if (env == nullptr || *env == '\0') return Status::OK();
  const std::string v = env;
  const size_t colon = v.find(':');
  const auto bad = [&v](const std::string& why) {
    return Status::InvalidArgument("CAIRN_INJECT_FAILURE=" + v + ": " + why +
                                   " (expected <operator>:<records>[,<records>...], docs/faults.md)");
  };
  if (colon == std::string::npos || colon == 0) return bad("no operator");
  const std::string op = v.substr(0, colon);
  if (spec.Find(op) == nullptr) return bad("the job has no operator '" + op + "'");
  std::vector<uint64_t> after;
  std::string rest = v.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string n = rest.substr(0, comma);
    char* end = nullptr;
    const unsigned long long x = std::strtoull(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || x == 0) return bad("'" + n + "' is not a number of records > 0");
    after.push_back(x);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  if (after.empty()) return bad("no number of records");
  h->inject_op = op;
  h->inject_after = std::move(after);
  return Status::OK();
}

}  // namespace

Status ParseTestHooks(const JobSpec& spec, TestHooks* out) {
  *out = TestHooks();
  CAIRN_RETURN_IF_ERROR(ParseSlowSubtask(spec, out));
  return ParseInjectedFailures(spec, out);
}

void ApplyTestHooks(const TestHooks& hooks, uint32_t attempt, const std::vector<Task*>& tasks) {
  if (!hooks.inject_op.empty() && attempt < hooks.inject_after.size())
    for (Task* t : tasks)
      if (!t->is_source() && std::any_of(t->chain().begin(), t->chain().end(), [&](const ChainedOperator& c) {
            return c.ctx.operator_id == hooks.inject_op && c.ctx.subtask == 0;
          }))
        t->InjectFailureAfter(hooks.inject_after[attempt]);
  if (hooks.slow_us > 0)
    for (Task* t : tasks)
      for (size_t i = 0; i < t->chain().size(); ++i)
        if (t->chain()[i].ctx.operator_id == hooks.slow_op && t->chain()[i].ctx.subtask == hooks.slow_subtask)
          t->SlowDownPerBatch(i, hooks.slow_us);
}

}  // namespace cairn

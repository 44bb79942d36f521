#include "state/operator_state_redistribution.h"

namespace cairn {

const char* StateRedistributionName(StateRedistribution r) {
  switch (r) {
    case StateRedistribution::kNone:
      return "none";
    case StateRedistribution::kSplit:
      return "split";
    case StateRedistribution::kUnion:
      return "union";
  }
  return "?";
}

Status RedistributeOperatorState(const std::string& op, const OperatorStateRule& rule, uint32_t old_parallelism,
                                 const std::map<uint32_t, std::string>& old, uint32_t new_parallelism,
                                 const std::string& where, std::map<uint32_t, std::string>* out) {
  out->clear();
  if (old_parallelism == new_parallelism) {
    *out = old;
    return Status::OK();
  }
  if (old.empty()) return Status::OK();
  if (rule.mode == StateRedistribution::kNone || !rule.to_items || !rule.from_items)
    return Status::InvalidArgument("operator '" + op + "' had parallelism " + std::to_string(old_parallelism) +
                                   " in checkpoint " + where + " but has " + std::to_string(new_parallelism) +
                                   " now, and its operator state has no redistribution rule");
  std::vector<std::string> items;
  for (uint32_t s = 0; s < old_parallelism; ++s) {
    auto it = old.find(s);
    if (it == old.end())
      return Status::Corruption("checkpoint " + where + ": operator '" + op + "' has operator state for some subtasks but not for subtask " +
                                std::to_string(s) + " of " + std::to_string(old_parallelism));
    CAIRN_RETURN_IF_ERROR(rule.to_items(it->second, s, old_parallelism, &items)
                              .WithContext("checkpoint " + where + ": operator '" + op + "' subtask " + std::to_string(s)));
  }
  if (rule.mode == StateRedistribution::kSplit && rule.halve) {
    // Scaling up: halve items, in passes, until every new subtask can get one.
    bool progress = true;
    while (items.size() < new_parallelism && progress) {
      progress = false;
      for (size_t k = 0; k < items.size() && items.size() < new_parallelism;) {
        std::string first, second;
        if (!rule.halve(items[k], &first, &second)) {
          ++k;
          continue;
        }
        items[k] = std::move(first);
        items.insert(items.begin() + static_cast<long>(k) + 1, std::move(second));
        k += 2;
        progress = true;
      }
    }
  }
  std::vector<std::vector<std::string>> per(new_parallelism);
  for (size_t k = 0; k < items.size(); ++k) {
    if (rule.mode == StateRedistribution::kSplit) {
      per[k % new_parallelism].push_back(std::move(items[k]));
    } else {
      for (auto& p : per) p.push_back(items[k]);
    }
  }
  for (uint32_t j = 0; j < new_parallelism; ++j) (*out)[j] = rule.from_items(per[j]);
  return Status::OK();
}

}  // namespace cairn

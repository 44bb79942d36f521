// Redistribution of operator state when a restore changes an operator's parallelism.
//
// Operator state is a list of items (Flink's list state). Each operator type says how its
// list is redistributed: `kSplit` (every item goes to exactly one new subtask: item k of
// the concatenated lists of old subtasks 0, 1, ... goes to new subtask k mod p') or
// `kUnion` (every new subtask gets every item). A type with `kNone` keeps no operator state;
// a checkpoint that has some for it cannot be rescaled. At unchanged parallelism every
// subtask gets its own bytes back untouched.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace cairn {

enum class StateRedistribution { kNone, kSplit, kUnion };
const char* StateRedistributionName(StateRedistribution r);

// How an operator type's state is seen as a list of items.
struct OperatorStateRule {
  StateRedistribution mode = StateRedistribution::kNone;
  // The items of old subtask `subtask` of `parallelism`, from its state bytes.
  std::function<Status(std::string_view bytes, uint32_t subtask, uint32_t parallelism, std::vector<std::string>* items)>
      to_items;
  // The state bytes of a new subtask that gets `items` (possibly none).
  std::function<std::string(const std::vector<std::string>& items)> from_items;
  // Optional, split only: divides one item into two whose union is the same work, so that a
  // scaled-up operator has an item for every subtask. False when it cannot be divided.
  std::function<bool(const std::string& item, std::string* first, std::string* second)> halve;
};

// The operator state of every new subtask of `op` (new_parallelism of them) from the states
// of its old subtasks (`old`: subtask -> bytes; old_parallelism of them). At equal parallelism
// `out` is `old`. Otherwise every new subtask gets state, perhaps an empty list, so that none
// starts as if fresh.
Status RedistributeOperatorState(const std::string& op, const OperatorStateRule& rule, uint32_t old_parallelism,
                                 const std::map<uint32_t, std::string>& old, uint32_t new_parallelism,
                                 const std::string& where, std::map<uint32_t, std::string>* out);

}  // namespace cairn

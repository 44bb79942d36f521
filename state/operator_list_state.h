// Operator list state: named lists of typed items that an operator keeps per subtask (not per
// key), checkpointed by the framework and redistributed when a restore changes the operator's
// parallelism. Flink's operator ListState (even split) and UnionListState.
//
//   OperatorListState<int64_t>* offsets;
//   CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetListState("offsets", &offsets));     // split
//   CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState("seen", &seen));      // union
//   for (int64_t o : offsets->items()) ...   // what was restored (empty on a fresh start)
//   offsets->Update({a, b});                 // what the next checkpoint stores
//
// How a state's items are redistributed when the parallelism changes (its mode):
//   split: the items of old subtasks 0, 1, ... concatenated; item k goes to new subtask k mod p'.
//   union: every subtask gets every item of every old subtask, in old-subtask order, at every
//          restore (also at an unchanged parallelism, as in Flink).
// At an unchanged parallelism every subtask gets its own split items back, in order. After a
// rescale every new subtask gets every state, perhaps empty, so none starts as if fresh.
//
// Contract: an OperatorStateStore and its states are used by the subtask's task thread only
// (and by Open before it starts). A state's pointer stays valid for the life of the store. The
// items live in memory: a checkpoint stores every state's items as they are once the operator's
// SnapshotState has returned (so SnapshotState may Update them). A restored state the operator
// does not declare is kept as it was and stored again by later checkpoints: restored state is
// never dropped silently. Declaring a name again with the same mode and type returns the same
// state; another mode or type is InvalidArgument, and so are restored items that do not
// deserialize as T. Values are typed through Serializer<T> (state/serializer.h).
//
// In a checkpoint the store is the subtask's `list.state` file (state/checkpoint_format.h),
// beside the operator's own `operator.state` bytes (OperatorSnapshot::operator_state), which are
// independent of it. Its bytes: a format byte (1), the state count (fixed64), then per state
// in name order its mode byte (0 split, 1 union), its Serializer kName and its name
// (length-prefixed), its item count (fixed64) and each item (length-prefixed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "state/serializer.h"

namespace cairn {

enum class ListStateMode : uint8_t { kSplit = 0, kUnion = 1 };
const char* ListStateModeName(ListStateMode m);  // "split", "union"

// One state as bytes: what a checkpoint stores of it.
struct ListStateBytes {
  ListStateMode mode = ListStateMode::kSplit;
  std::string type;  // Serializer<T>::kName
  std::string name;
  std::vector<std::string> items;
};

// The `list.state` bytes of `states` (sorted by name; names unique).
std::string EncodeListStates(const std::vector<ListStateBytes>& states);
// False when `bytes` are malformed (never reads past them).
bool DecodeListStates(std::string_view bytes, std::vector<ListStateBytes>* states);

// The `list.state` bytes of every new subtask of operator `op` (new_parallelism of them) from
// those of its old subtasks (`old`: subtask -> bytes, old_parallelism of them, any missing
// subtask having none), by each state's mode. At equal parallelism and without union states
// `out` is `old`. Corruption
// naming `where` when bytes are malformed or the old subtasks disagree on a state's mode or type.
Status RedistributeListStates(const std::string& op, uint32_t old_parallelism,
                              const std::map<uint32_t, std::string>& old, uint32_t new_parallelism,
                              const std::string& where, std::map<uint32_t, std::string>* out);

template <class T>
class OperatorListState;

class OperatorStateStore {
 public:
  OperatorStateStore() = default;
  OperatorStateStore(const OperatorStateStore&) = delete;
  OperatorStateStore& operator=(const OperatorStateStore&) = delete;

  // Declares (or finds) state `name`, redistributed by splitting / by union.
  template <class T>
  Status GetListState(const std::string& name, OperatorListState<T>** out) {
    return Get(name, ListStateMode::kSplit, out);
  }
  template <class T>
  Status GetUnionListState(const std::string& name, OperatorListState<T>** out) {
    return Get(name, ListStateMode::kUnion, out);
  }

  // ---- For the framework.
  // Before Open: the states of a checkpoint (`where` names it and the subtask in errors).
  // Corruption when `bytes` are malformed.
  Status Restore(std::string_view bytes, const std::string& where);
  // No state declared or restored: a checkpoint stores no `list.state` for this subtask.
  bool empty() const { return states_.empty(); }
  // The bytes a checkpoint stores now (EncodeListStates of every state).
  std::string Snapshot() const;

  // What a typed state is to the store: its items as bytes.
  class TypedItems {
   public:
    virtual ~TypedItems() = default;
    virtual void Encode(std::vector<std::string>* items) const = 0;
  };

 private:
  struct Entry {
    ListStateMode mode = ListStateMode::kSplit;
    std::string type;
    std::vector<std::string> restored;   // until the state is declared
    std::unique_ptr<TypedItems> typed;   // once declared
  };
  template <class T>
  Status Get(const std::string& name, ListStateMode mode, OperatorListState<T>** out);
  Status Find(const std::string& name, ListStateMode mode, const char* type, Entry** entry);

  std::map<std::string, Entry> states_;
  std::string where_;  // the restored file, for errors
};

// A list of T held in memory; see the top of this file.
template <class T>
class OperatorListState final : public OperatorStateStore::TypedItems {
 public:
  const std::vector<T>& items() const { return items_; }
  void Add(T v) { items_.push_back(std::move(v)); }
  void Update(std::vector<T> items) { items_ = std::move(items); }
  void Clear() { items_.clear(); }

  void Encode(std::vector<std::string>* out) const override {
    out->clear();
    for (const T& v : items_) {
      out->emplace_back();
      Serializer<T>::Write(v, &out->back());
    }
  }

 private:
  friend class OperatorStateStore;
  std::vector<T> items_;
};

template <class T>
Status OperatorStateStore::Get(const std::string& name, ListStateMode mode, OperatorListState<T>** out) {
  Entry* e = nullptr;
  CAIRN_RETURN_IF_ERROR(Find(name, mode, Serializer<T>::kName, &e));
  if (e->typed == nullptr) {
    auto typed = std::make_unique<OperatorListState<T>>();
    for (size_t i = 0; i < e->restored.size(); ++i) {
      T v;
      if (!Serializer<T>::Read(e->restored[i], &v))
        return Status::InvalidArgument(where_ + ": item " + std::to_string(i) + " of list state '" + name +
                                       "' does not read as " + Serializer<T>::kName);
      typed->items_.push_back(std::move(v));
    }
    e->restored.clear();
    e->typed = std::move(typed);
  }
  *out = static_cast<OperatorListState<T>*>(e->typed.get());
  return Status::OK();
}

}  // namespace cairn

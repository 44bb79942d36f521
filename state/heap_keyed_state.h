// HeapKeyedStateBackend is the heap backend's keyed state of one operator subtask: every state
// lives in memory, with the entries changed since the last snapshot tracked, so that a
// checkpoint persists only the delta (the subtask's StateStore writes it to RocksDB and
// checkpoints that, docs/state.md).
//
// The default state (kDefaultStateName, a ValueState<int64_t>) is the subtask's
// KeyedInt64State, the fast open-addressing table that `count` also uses directly; every named
// state is a hash table by key (hashed with the caller's KeyHash, so a point read or write is one
// probe, not a search of the ordered keys), each key holding its value (value and list states)
// or its map state's user keys in byte order (ForEachUserKey walks one small ordered map).
//
// Contract: that of KeyedStateBackend (state/keyed_state_api.h). Snapshot() costs O(changed
// entries): the changed entries are tracked by address (hash-table and map nodes do not move),
// and removed ones are erased there. LoadNamed (restore) inserts without marking the entry
// changed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "state/keyed_state.h"
#include "state/keyed_state_api.h"

namespace cairn {

class HeapKeyedStateBackend : public KeyedStateBackend {
 public:
  // `int64` is the default state; not owned, it must outlive this backend.
  explicit HeapKeyedStateBackend(KeyedInt64State* int64);
  ~HeapKeyedStateBackend() override;

  Status Declare(const StateDescriptor& d, StateId* id) override;
  bool Get(StateId id, std::string_view key, uint64_t hash, std::string_view user_key, std::string* value) override;
  void Put(StateId id, std::string_view key, uint64_t hash, std::string_view user_key, std::string_view value) override;
  void Delete(StateId id, std::string_view key, uint64_t hash, std::string_view user_key) override;
  void ForEachUserKey(StateId id, std::string_view key, uint64_t hash,
                      const std::function<void(std::string_view uk, std::string_view value)>& fn) override;
  void AppendToList(StateId id, std::string_view key, uint64_t hash, std::string_view element) override;
  void ForEachEntry(StateId id,
                    const std::function<void(std::string_view key, std::string_view uk, std::string_view value)>& fn) override;
  Status Snapshot(std::unique_ptr<StateDelta>* out) override;
  size_t size() const override;

  // Restore: one stored entry of the named state `state` (a StateDescriptor encoding),
  // `stored_key` as EncodeEntryKey made it, or with `removed` its removal (a changelog
  // segment's), not marked changed. Corruption when either does not parse.
  Status LoadNamed(std::string_view state, std::string_view stored_key, std::string_view value, bool removed = false);

 private:
  struct Entry {
    std::string value;
    bool dirty = false;
    bool removed = false;
  };
  // The entries of one key: `single` for value and list states, `by_user_key` for map states.
  struct KeyRows {
    uint32_t key_group = 0;
    Entry single;
    std::map<std::string, Entry, std::less<>> by_user_key;
  };
  // A lookup by key bytes with the caller's KeyHash (no second hash, no copy of the key).
  struct Probe {
    std::string_view key;
    uint64_t hash;
  };
  struct ProbeHash {
    using is_transparent = void;
    size_t operator()(const std::string& k) const;
    size_t operator()(const Probe& p) const { return static_cast<size_t>(p.hash); }
  };
  struct ProbeEq {
    using is_transparent = void;
    bool operator()(const std::string& a, const std::string& b) const { return a == b; }
    bool operator()(const Probe& a, const std::string& b) const { return a.key == b; }
    bool operator()(const std::string& a, const Probe& b) const { return a == b.key; }
  };
  using Rows = std::unordered_map<std::string, KeyRows, ProbeHash, ProbeEq>;
  // A changed entry: its key's node, its user key (null for value and list states), the entry.
  struct Dirty {
    Rows::value_type* rows;
    const std::string* user_key;
    Entry* entry;
  };
  struct Table {
    StateDescriptor desc;
    std::string encoded;  // desc.Encode()
    Rows rows;
    std::vector<Dirty> dirty;  // changed since the last snapshot
    size_t live = 0;
  };
  Table* FindOrAddTable(const StateDescriptor& d, StateId* id);
  Table* table(StateId id) { return tables_[id - 1].get(); }
  // The entry of (key, user_key) in t, or null; with `create`, made (as removed) when missing.
  Entry* Find(Table* t, std::string_view key, uint64_t hash, std::string_view user_key, bool create,
              Rows::value_type** rows, const std::string** uk);
  void Touch(Table* t, Rows::value_type* rows, const std::string* uk, Entry* e);

  KeyedInt64State* const int64_;
  std::vector<std::unique_ptr<Table>> tables_;  // StateId i >= 1 is tables_[i - 1]; 0 is the default state
};

}  // namespace cairn

// HeapKeyedStateBackend is the heap backend's keyed state of one operator subtask: every state
// lives in memory, with the entries changed since the last snapshot tracked, so that a
// checkpoint persists only the delta (the subtask's StateStore writes it to RocksDB and
// checkpoints that, docs/state.md).
//
// The default state (kDefaultStateName, a ValueState<int64_t>) is the subtask's
// KeyedInt64State, the fast open-addressing table that `count` also uses directly; every named
// state is an ordered in-memory table of stored key (EncodeEntryKey) -> value bytes, ordered so
// that a map state's user keys of one key are one range.
//
// Contract: that of KeyedStateBackend (state/keyed_state_api.h). Snapshot() costs O(changed
// entries). LoadNamed (restore) inserts without marking the entry changed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
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
  // `stored_key` as EncodeEntryKey made it. Corruption when either does not parse.
  Status LoadNamed(std::string_view state, std::string_view stored_key, std::string_view value);

 private:
  struct Entry {
    std::string value;
    bool dirty = false;
    bool removed = false;
  };
  struct Table {
    StateDescriptor desc;
    std::string encoded;  // desc.Encode()
    std::map<std::string, Entry, std::less<>> rows;
    std::vector<std::string> dirty;  // keys of rows changed since the last snapshot
    size_t live = 0;
  };
  Table* FindOrAddTable(const StateDescriptor& d, StateId* id);
  Table* table(StateId id) { return tables_[id - 1].get(); }
  void Touch(Table* t, const std::string& stored, Entry* e);

  KeyedInt64State* const int64_;
  std::vector<std::unique_ptr<Table>> tables_;  // StateId i >= 1 is tables_[i - 1]; 0 is the default state
  std::string key_buf_;
};

}  // namespace cairn

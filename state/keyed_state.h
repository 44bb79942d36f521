// KeyedInt64State is the keyed state of one operator subtask: a map from key bytes to an int64,
// held in memory (an open-addressing hash table over a key arena) with the keys changed since
// the last snapshot tracked, so that a checkpoint persists only the delta.
//
// Contract: owned and used by one task thread; TakeDelta() is the synchronous part of a
// snapshot and costs O(changed keys); the returned StateDelta is immutable and may be handed
// to another thread. Keys must belong to this subtask's key groups (the hash partitioner
// guarantees it); a key outside them is never stored: Get/Put/Add/LoadEntry ignore it and
// record foreign_key_error(), which fails the task (engine/runtime/task.cc). The operator API (Get/Put/Add) does not expose where entries live, so a
// RocksDB-backed variant for state larger than memory can replace the table later.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/allocator.h"
#include "engine/base/key_groups.h"
#include "engine/base/status.h"

namespace cairn {

// The entries changed since the previous delta, encoded for one RocksDB WriteBatch. Each key
// appears once (TakeDelta and Merge keep it so).
struct StateDelta {
  struct Entry {
    uint32_t key_group : 31;  // < 65536 (max_parallelism <= 65536)
    uint32_t deleted : 1;     // the key was removed (KeyedInt64State::Delete)
    uint32_t key_length;
    uint64_t key_offset;  // into keys, or the key's address in key_owner; 64 bits: deltas merged
                          // over failed checkpoints may pass 4 GiB
    int64_t value;
  };
  std::vector<Entry> entries;
  std::string keys;
  // Set by TakeDelta: its table's salt and key count (used slots), and whether `entries` come
  // in that table's slot order (always, from TakeDelta; a segment of an earlier version may say
  // not): what a changelog segment records so that a restore can load it in order
  // (KeyedInt64State::AdoptSlotOrder). Merge clears them.
  bool slot_order = false;
  uint64_t table_salt = 0;
  uint64_t table_keys = 0;
  // Set by TakeDelta: the table's key arena (immutable bytes that never move), kept alive by
  // this delta, and the entries' keys are read there instead of copied into `keys` (the
  // synchronous part hands over the dirty set's keys, not a copy of them).
  std::shared_ptr<const void> key_owner;
  std::string_view key(const Entry& e) const {
    if (key_owner != nullptr) return std::string_view(reinterpret_cast<const char*>(e.key_offset), e.key_length);
    return std::string_view(keys.data() + e.key_offset, e.key_length);
  }

  // Entries of named states (state/keyed_state_api.h), changed since the previous delta:
  // `state` is the StateDescriptor::Encode() of the state, `key` the stored key
  // (EncodeEntryKey), `value` the stored bytes unless `deleted`.
  struct NamedEntry {
    std::string state;
    std::string key;
    std::string value;
    bool deleted = false;
  };
  std::vector<NamedEntry> named;
  // The RocksDB backend: a local RocksDB checkpoint of the working database taken by the
  // synchronous part (its files are what the checkpoint persists); empty for the heap backend.
  std::string staged_dir;
  // Staged directories of earlier, failed checkpoints that this delta's supersedes (removed
  // once it is persisted).
  std::vector<std::string> obsolete_staged;

  bool empty() const { return entries.empty() && named.empty(); }

  // Adds the entries of `newer` (a later delta of the same state): an entry of `newer` replaces
  // this delta's entry for the same key, so every key still appears once and the delta stays
  // no larger than the state. What a checkpoint that failed to persist hands to the next one.
  void Merge(const StateDelta& newer);
};

// The error of a key (of hash `hash`) that reached the state of a subtask owning `range` only:
// a record delivered to the wrong subtask. Shared by every keyed state.
Status ForeignKeyError(std::string_view key, uint64_t hash, uint32_t max_parallelism, const KeyGroupRange& range);

class KeyedInt64State {
 public:
  KeyedInt64State(uint32_t max_parallelism, KeyGroupRange range);
  ~KeyedInt64State();
  KeyedInt64State(const KeyedInt64State&) = delete;
  KeyedInt64State& operator=(const KeyedInt64State&) = delete;

  // Adds `delta` to the value of `key` (absent counts as 0) and returns the new value.
  int64_t Add(std::string_view key, int64_t delta);
  // The same with the key's hash (KeyHash) computed by the caller, for batched updates.
  int64_t AddHashed(std::string_view key, uint64_t hash, int64_t delta);
  // Memory-level parallelism for batched updates: start loading the home slot of `hash`, and
  // (once that slot is likely loaded) the key bytes it points to. Hints only.
  void PrefetchSlot(uint64_t hash) const;
  void PrefetchKey(uint64_t hash) const;
  // True and *value set when `key` is present.
  bool Get(std::string_view key, int64_t* value) const;
  void Put(std::string_view key, int64_t value);
  // Removes `key` (the next delta records the removal).
  void Delete(std::string_view key);
  // Live entries.
  size_t size() const;

  // Synchronous snapshot: the entries changed since the last call, in slot order (their values
  // copied, their keys referenced in the arena); clears the change set.
  std::unique_ptr<StateDelta> TakeDelta();
  // Restore: makes room for `n` entries at once (a hint; no effect when there is room), so that
  // loading them does not grow the table step by step.
  void Reserve(size_t n);
  // Restore: inserts without marking the entry changed.
  void LoadEntry(std::string_view key, int64_t value);
  // Restore: LoadEntry of the n entries (keys[i], values[i]), each a distinct key, the home
  // slot of a later entry prefetched while one is inserted (memory-level parallelism for a
  // large table).
  void LoadEntries(const std::string_view* keys, const int64_t* values, size_t n);
  // Restore of entries from several ordered sources visited in another order (the changelog
  // segments of a checkpoint loaded a stripe of the table at a time): each call names its
  // source's version, 1-255, a later source a higher one. An entry sets a key's value, or
  // removes the key, unless a source with a higher version already did so since
  // BeginVersionedLoad, which makes every stored entry version 0 (an entry stored any other
  // way is version 0 too, unless an earlier versioned load set it). A removal of an absent key
  // leaves a removed slot, so that an older entry visited after it does not bring the key
  // back. The version is a byte of the slot; nothing else reads it.
  void BeginVersionedLoad();
  // `hashes[i]` is KeyHash(keys[i]); the keys are distinct (one source's entries).
  void LoadVersioned(const std::string_view* keys, const uint64_t* hashes, const int64_t* values, size_t n,
                     uint8_t version);
  // A removal a changelog segment holds, not marked changed; `hash` is KeyHash(key).
  void LoadRemovalVersioned(std::string_view key, uint64_t hash, uint8_t version);
  // Where the home slot of a key of hash `hash` lies in [0, 2^64): Home() is its top bits, so a
  // load that visits keys by this order's top bits visits a range of slots at a time.
  uint64_t HomeOrder(uint64_t hash) const { return (hash ^ salt_) * kHomeMultiplier; }
  size_t slot_count() const { return slots_.size(); }
  // Restore, into an empty table (otherwise nothing happens): takes `salt`, the salt of a table
  // whose delta lists its keys in slot order (StateDelta::slot_order), and room for `keys`
  // entries, so that loading that delta visits the slots in order, not at random. A hint.
  void AdoptSlotOrder(uint64_t salt, size_t keys);
  // Restore, before loading `entries` entries listed in the slot order of a table with `salt`
  // and `table_keys` keys: when this table has that salt and the load could take it past its
  // growth threshold, it takes a fresh salt first. Keys sorted by home slot and loaded into a
  // table too small for them pile up in runs of thousands of slots (docs/state.md). The writer
  // held every key of the segments before its own, so after the load this table holds at most
  // max(size, table_keys) keys; and should a load still find long runs, LoadEntries takes a
  // fresh salt itself.
  void PrepareSlotOrderedLoad(uint64_t salt, size_t entries, size_t table_keys);
  // Visits every entry (unordered).
  void ForEach(const std::function<void(std::string_view key, int64_t value)>& fn) const;
  // Diagnostics: the mean number of slots a lookup of a stored key probes (1.0: every key in
  // its home slot; about 2 for random keys at the table's maximum load of 0.7).
  double MeanProbeLength() const;
  // Diagnostics: the salt of the home slots (random per table, or adopted: AdoptSlotOrder).
  uint64_t salt() const { return salt_; }

  // OK, or the first key seen outside range(), named with its key group (a record delivered to
  // the wrong subtask). Such a key was not stored.
  const Status& foreign_key_error() const { return foreign_key_error_; }

  uint32_t max_parallelism() const { return max_parallelism_; }
  const KeyGroupRange& range() const { return range_; }

 private:
  struct Slot;
  // The slot of `key`, inserted with value 0 (not dirty) when absent; may Grow().
  size_t FindOrInsert(std::string_view key, uint64_t hash, bool* inserted);
  // The slot holding `key` (of hash `hash`), removed or not, or kNoSlot.
  size_t Find(std::string_view key, uint64_t hash) const;
  static constexpr size_t kNoSlot = ~size_t{0};
  // The loop of LoadEntries and LoadVersioned over n keys and their hashes: keys of other
  // subtasks refused, the rest loaded by `load(i)`, which returns the slot of entry i (kNoSlot:
  // left out), while later keys' home slots are prefetched and an adopted salt is watched.
  template <typename Load>
  void LoadHashed(const std::string_view* keys, const uint64_t* hashes, size_t n, Load load);
  // Doubles the table and rebuilds dirty_bits_ (slots move).
  void Grow();
  // Sets mask_, shift_ and grow_at_ from slots_.size() (a power of two).
  void SetGeometry();
  // Moves every entry into `n` slots (a power of two), homed by the current salt_.
  void Rehash(size_t n);
  // A fresh random salt, every entry moved to its new home.
  void Resalt();
  void MarkDirty(size_t slot);
  void Remove(std::string_view key, bool mark_dirty);
  // Copies `key` into the arena; the returned pointer stays valid for the table's lifetime.
  const char* StoreKey(std::string_view key);
  bool Owns(uint64_t hash) const { return range_.Contains(KeyGroupOf(hash, max_parallelism_)); }
  // The slot a key of hash `hash` is first looked for in: the top bits of the hash scrambled
  // with this table's salt, so two tables (this process's or another's) order their slots
  // differently, and doubling the table splits each slot into two neighbours.
  size_t Home(uint64_t hash) const { return static_cast<size_t>(((hash ^ salt_) * kHomeMultiplier) >> shift_); }
  void RecordForeignKey(std::string_view key, uint64_t hash) const;

  const uint32_t max_parallelism_;
  const KeyGroupRange range_;
  static constexpr uint64_t kHomeMultiplier = 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio, odd
  uint64_t salt_;  // random per table (or adopted: AdoptSlotOrder)
  bool adopted_salt_ = false;  // salt_ is another table's (AdoptSlotOrder), not yet replaced
  // Fresh tables come zeroed and populated (engine/base/allocator.h): an all-zero Slot is empty.
  ZeroedArray<Slot> slots_;
  // Derived from slots_.size() by SetGeometry():
  size_t mask_ = 0;
  unsigned shift_ = 0;  // 64 - log2(slots_.size())
  size_t grow_at_ = 0;  // Grow() before count_ exceeds this (~0.7 of slots_.size())
  size_t count_ = 0;      // used slots, including removed ones (their keys stay in place)
  size_t removed_ = 0;    // used slots whose key was removed
  // Shared with the deltas that reference its keys (StateDelta::key_owner); only this table
  // appends to it (the task thread), and existing blocks never change.
  std::shared_ptr<std::vector<ZeroedArray<char>>> arena_blocks_ = std::make_shared<std::vector<ZeroedArray<char>>>();
  char* arena_ptr_ = nullptr;
  size_t arena_left_ = 0;
  // One bit per slot, set for the slots changed since the last TakeDelta (the Slot's dirty flag
  // is the truth; this is its index, 1/256 of the slots' size), and how many are set.
  std::vector<uint64_t> dirty_bits_;
  size_t dirty_count_ = 0;
  mutable Status foreign_key_error_;  // set by const Get too
};

}  // namespace cairn

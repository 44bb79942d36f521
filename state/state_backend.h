// A StateBackend keeps the keyed state of a job's keyed operator subtasks and checkpoints it:
// for each subtask it makes the state the operator reads and writes (a KeyedStateBackend,
// state/keyed_state_api.h: named value, map and list states; with the heap backend also the
// KeyedInt64State behind the default state) and a StateStore that persists it and makes
// checkpoints of it; it restores a subtask's key groups from the checkpoints of earlier
// subtasks, and reads a stored checkpoint back.
//
// Two backends (`state.backend`, docs/state.md): `heap` keeps every state in memory and writes
// the changed entries of each checkpoint to a per-subtask RocksDB in the asynchronous part;
// `rocksdb` reads and writes the per-subtask RocksDB directly (state larger than memory), and its
// synchronous part is a local RocksDB checkpoint. Both store the same checkpoint format (a
// RocksDB database: the default state in the default column family, each named state in a
// column family named by its StateDescriptor), so either restores the other's checkpoints.
//
// Contract: a StateBackend holds no state of its own and its calls are thread-safe, so the
// runtime restores every subtask in parallel through one backend. A subtask's KeyedInt64State
// is used by its task thread only (its TakeDelta() is the synchronous part of a snapshot); its
// StateStore by one persister thread at a time, in checkpoint order (the asynchronous part).
// Restores and reads never modify the snapshots they read. Every error is a Status naming the
// directory involved. The runtime, the checkpoint layer and the CLI name only this interface.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/base/status.h"
#include "state/keyed_state.h"
#include "state/keyed_state_api.h"

namespace cairn {

// The `state:` section of a job (docs/configuration.md).
struct StateBackendOptions {
  enum class Kind { kHeap, kRocksDb };
  Kind kind = Kind::kHeap;
  uint64_t block_cache = 64ull << 20;   // state.rocksdb.block_cache: the working RocksDB's LRU block cache
  uint64_t write_buffer = 16ull << 20;  // state.rocksdb.write_buffer: its memtable size
  // <checkpoint.dir>/shared: checkpoints are incremental (state/shared_files.h). Empty: every
  // checkpoint is a whole RocksDB checkpoint (what tests of the store use).
  std::string shared_dir;
  // state.changelog (heap backend only, and only with shared_dir): checkpoints write the delta
  // as a changelog segment and reference the last background materialization of the RocksDB
  // (state/rocksdb_state_store.h); state.materialize_interval: how often that is made.
  bool changelog = false;
  uint64_t materialize_interval_ms = 10000;
  // state.materialize_ratio: a materialization also starts as soon as the segments written
  // since the last one add up to more than this times that materialization's size (and to at
  // least materialize_min_bytes), so that a restore reads about (1 + ratio) times the state.
  // 0 (the default, as Flink's changelog backend): by the interval only. On 2 cores with
  // every key changing every second the materializer does not keep up with a ratio of 1 and
  // costs the job CPU (docs/benchmarks.md, "Large keyed state").
  double materialize_ratio = 0;
  uint64_t materialize_min_bytes = 16ull << 20;  // not a job key: tests lower it
};

// One entry of a stored snapshot, of any state. For the default state: name "", kind value,
// type "int64". `value` is the stored bytes (Serializer<type>; a list's elements SplitList).
struct StateEntry {
  const StateDescriptor* state;
  uint32_t key_group;
  std::string_view key;
  std::string_view user_key;  // map states only
  std::string_view value;
};
using StateEntryFn = std::function<void(const StateEntry&)>;


// Where a stored keyed-state snapshot is and which key groups it holds.
struct KeyedSnapshotHandle {
  std::string dir;  // absolute; what PersistAndCheckpoint made
  KeyGroupRange key_groups;
};

// Visits one entry of a stored snapshot.
using KeyedEntryFn = std::function<void(uint32_t key_group, std::string_view key, int64_t value)>;

// A StateStore is the persistent side of one subtask's keyed state: every delta of the
// in-memory state goes into it, and each checkpoint of the subtask is a snapshot of it.
class StateStore {
 public:
  virtual ~StateStore() = default;

  // Writes `delta` (a later delta's entry replaces an earlier one's) and makes a snapshot of
  // everything written so far at `checkpoint_dir`, which must not exist (missing parents are
  // created). *bytes: the size of the snapshot's files. A delta that fails to persist is
  // handed again, merged with the next one (StateDelta::Merge).
  virtual Status PersistAndCheckpoint(const StateDelta& delta, const std::string& checkpoint_dir,
                                      uint64_t* bytes) = 0;
};

// The keyed state of one subtask as deploy hands it to the operator and the task.
struct KeyedSubtaskState {
  std::unique_ptr<KeyedInt64State> int64;    // heap backend only: the default state
  std::unique_ptr<StateStore> store;         // persists it
  std::unique_ptr<KeyedStateBackend> keyed;  // every state; may point into int64 and store
};

class StateBackend {
 public:
  virtual ~StateBackend() = default;

  // A keyed subtask's state with nothing to restore: empty in-memory state owning `key_groups`
  // of `max_parallelism`, and an empty store whose working files go to `work_dir` (which must
  // not exist yet).
  virtual Status CreateKeyedState(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                                  std::unique_ptr<KeyedInt64State>* state, std::unique_ptr<StateStore>* store) const = 0;

  // The same, holding exactly the entries of `snapshots` whose key group lies in `key_groups`,
  // in the in-memory state (not marked changed) and in the store: one snapshot of the same
  // range when the parallelism is unchanged, the overlapping snapshots of the old subtasks when
  // it changed. A missing snapshot directory is NotFound naming it. On failure *state and
  // *store are left unset and `work_dir` is removed.
  virtual Status RestoreKeyedState(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                                   uint32_t max_parallelism, KeyGroupRange key_groups,
                                   std::unique_ptr<KeyedInt64State>* state, std::unique_ptr<StateStore>* store) const = 0;

  // Visits every entry of the stored snapshot at `dir`, reading it through (for `cairn state
  // dump`, and for a restore's pre-flight, so that a damaged snapshot fails before anything on
  // disk changes). A missing directory is NotFound, damage Corruption, both naming `dir`.
  virtual Status ReadSnapshot(const std::string& dir, const KeyedEntryFn& fn) const = 0;

  // The state of a keyed subtask, every kind of state (what deploy uses). The defaults wrap
  // CreateKeyedState / RestoreKeyedState in a HeapKeyedStateBackend (the default state only).
  // RestoreKeyed gives up once `stop` (when non-null; set from any thread, e.g. on SIGTERM) is
  // set, within a bounded amount of work: Aborted, as any failure (`work_dir` removed). The
  // default does not look at `stop`.
  virtual Status CreateKeyed(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                             KeyedSubtaskState* out) const;
  virtual Status RestoreKeyed(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                              uint32_t max_parallelism, KeyGroupRange key_groups, KeyedSubtaskState* out,
                              const std::atomic<bool>* stop) const;
  // Visits every entry of every state of the stored snapshot at `dir` (errors as ReadSnapshot).
  // The default visits ReadSnapshot's entries as the default state.
  virtual Status ReadStates(const std::string& dir, const StateEntryFn& fn) const;
  // A restore's pre-flight: checks the stored snapshot at `dir` by its checksums (every file
  // it lists present, every block and changelog segment sound) without decoding its entries
  // into anything, so that damage fails before anything on disk changes (errors as
  // ReadSnapshot). The default reads it through with ReadStates.
  virtual Status VerifySnapshot(const std::string& dir) const;
};

// The backend `options` names. Both keep one RocksDbStateStore per subtask
// (state/rocksdb_state_store.h and docs/state.md describe the bytes).
std::unique_ptr<StateBackend> NewStateBackend(const StateBackendOptions& options);
// The heap backend with default options and full (non-incremental) checkpoints.
std::unique_ptr<StateBackend> NewRocksDbStateBackend();

}  // namespace cairn

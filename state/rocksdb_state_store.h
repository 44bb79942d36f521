// RocksDbStateStore is the RocksDB database that persists one subtask's keyed state, and the
// source of that subtask's keyed-state checkpoints: the StateStore of the RocksDB backend
// (NewRocksDbStateBackend in state/state_backend.h, which the rest of Cairn uses instead).
//
// Layout: one RocksDB instance per stateful subtask in a private working directory; key =
// key group (2 bytes, big-endian, so max_parallelism <= 65536) + key bytes, value = int64
// (8 bytes, little-endian). A checkpoint of it is a RocksDB checkpoint (hard links: SST files
// unchanged since the last checkpoint are shared, not copied), which is itself an openable
// database.
//
// Contract: not thread-safe; the runtime calls PersistAndCheckpoint from one persister thread
// per subtask, in checkpoint order. Restore never modifies the snapshot directories it reads.
// Every RocksDB error comes back as a Status naming the directory.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <string>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/base/status.h"
#include "state/keyed_state.h"
#include "state/state_backend.h"

namespace rocksdb {
class DB;
}

namespace cairn {

class RocksDbStateStore : public StateStore {
 public:
  // Creates a fresh, empty database in `work_dir` (which must not exist yet).
  static Status Create(const std::string& work_dir, std::unique_ptr<RocksDbStateStore>* out);
  ~RocksDbStateStore() override;

  // Writes `delta` in one WriteBatch (no WAL), flushes, and creates a RocksDB checkpoint at
  // `checkpoint_dir` (which must not exist; missing parents are created). *bytes: size of the
  // checkpoint's files.
  Status PersistAndCheckpoint(const StateDelta& delta, const std::string& checkpoint_dir, uint64_t* bytes) override;

  // Fills `state` with every entry of `snapshots` whose key group lies in state->range(), and
  // makes this (fresh) database hold exactly those entries. When there is exactly one snapshot
  // and its range equals state->range(), the database is rebuilt from hard links to its files
  // (no rewrite), which is the fast path of an unchanged-parallelism restore. A missing snapshot
  // directory is NotFound naming it. On failure `work_dir` is removed and `state` may hold part
  // of the entries (the caller discards it).
  static Status Restore(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                        KeyedInt64State* state, std::unique_ptr<RocksDbStateStore>* out);

  // Reads every entry of a stored snapshot (for `cairn state dump` and tests).
  static Status ReadSnapshot(const std::string& dir,
                             const std::function<void(uint32_t key_group, std::string_view key, int64_t value)>& fn);

 private:
  RocksDbStateStore(std::string dir, rocksdb::DB* db) : dir_(std::move(dir)), db_(db) {}
  const std::string dir_;
  rocksdb::DB* db_;
};

}  // namespace cairn

// RocksDbStateStore is the RocksDB database that holds one subtask's keyed state, and the
// source of that subtask's keyed-state checkpoints: the StateStore of both backends
// (NewStateBackend in state/state_backend.h, which the rest of Cairn uses instead). The heap
// backend writes each checkpoint's delta into it; the RocksDB backend reads and writes it
// directly through NewKeyedBackend().
//
// Layout: one RocksDB instance per stateful subtask in a private working directory. The
// default state (ValueState<int64_t> "") is the default column family: key = key group (2
// bytes, big-endian, so max_parallelism <= 65536) + key bytes, value = int64 (8 bytes,
// little-endian). Each named state is a column family named StateDescriptor::Encode(), keys
// EncodeEntryKey, values the Serializer's bytes. A checkpoint of it is either a whole RocksDB
// checkpoint (hard links), itself an openable database, or, with options.shared_dir set, an
// incremental one: the SST files go to shared_dir once and the checkpoint lists them
// (state/shared_files.h); reading one links the files back into a temporary database.
//
// With options.changelog (the heap backend only, docs/state.md "Changelog checkpoints") a
// checkpoint does not write the delta into RocksDB: it writes it as one changelog segment
// (state/changelog_segment.h) and lists, in SHARED, the files of the last materialization (a
// local RocksDB checkpoint, every one of its files uploaded to shared_dir) plus the segments
// written since. A background thread (the materializer) applies the segments to the database
// and makes a new materialization every options.materialize_interval_ms, or sooner when the
// segments since the last one outgrow options.materialize_ratio times its size; the checkpoint
// after it references that one, and the local copies of what it replaced are removed.
//
// Contract: PersistAndCheckpoint is called from one persister thread per subtask, in
// checkpoint order; Stage and the RocksDB backend's reads and writes from the task thread
// (RocksDB itself is thread-safe). Restore never modifies the snapshot directories it reads.
// Every RocksDB error comes back as a Status naming the directory.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <memory>
#include <string_view>
#include <string>
#include <vector>

#include "engine/base/file_util.h"
#include "engine/base/key_groups.h"
#include "engine/base/mutex.h"
#include "engine/base/status.h"
#include "state/keyed_state.h"
#include "state/state_backend.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}

namespace cairn {

class HeapKeyedStateBackend;
struct SharedFileRef;
class SharedFilesLock;

class RocksDbStateStore : public StateStore {
 public:
  // Creates a fresh, empty database in `work_dir` (which must not exist yet).
  static Status Create(const std::string& work_dir, std::unique_ptr<RocksDbStateStore>* out);
  static Status Create(const std::string& work_dir, const StateBackendOptions& options,
                       std::unique_ptr<RocksDbStateStore>* out);
  ~RocksDbStateStore() override;

  // Writes `delta` in one WriteBatch (no WAL), flushes, and creates a checkpoint at
  // `checkpoint_dir` (which must not exist; missing parents are created): from delta.staged_dir
  // when the RocksDB backend staged one, else a new RocksDB checkpoint. *bytes: size of the
  // checkpoint's own files plus the shared files it uploaded (not those it references again).
  Status PersistAndCheckpoint(const StateDelta& delta, const std::string& checkpoint_dir, uint64_t* bytes) override;

  // The RocksDB backend's synchronous snapshot: a RocksDB checkpoint (flush, then hard links)
  // of the working database into a new directory next to it, *dir.
  Status Stage(std::string* dir);

  // The RocksDB backend: the operator's view of this database (reads and writes go to it).
  // The store must outlive it.
  std::unique_ptr<KeyedStateBackend> NewKeyedBackend(uint32_t max_parallelism, KeyGroupRange range);

  // Fills `state` with every entry of `snapshots` whose key group lies in state->range(), and
  // makes this (fresh) database hold exactly those entries. When there is exactly one snapshot
  // and its range equals state->range(), the database is rebuilt from hard links to its files
  // (no rewrite), which is the fast path of an unchanged-parallelism restore. A missing snapshot
  // directory is NotFound naming it. On failure `work_dir` is removed and `state` may hold part
  // of the entries (the caller discards it).
  static Status Restore(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                        KeyedInt64State* state, std::unique_ptr<RocksDbStateStore>* out);
  // The same for every state, with `options`, for the key groups `range`: the default state
  // goes into `state` and the named states into `named` when they are non-null (the heap
  // backend), or only into the database (the RocksDB backend). Once `stop` (when non-null) is
  // set, gives up within a bounded amount of work (between files and segments, and every 64K
  // entries read): Aborted "... was stopped", with `work_dir` removed as after any failure.
  static Status Restore(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                        const StateBackendOptions& options, KeyGroupRange range, KeyedInt64State* state,
                        HeapKeyedStateBackend* named, std::unique_ptr<RocksDbStateStore>* out,
                        const std::atomic<bool>* stop = nullptr);

  // Reads every entry of the default state of a stored snapshot (for `cairn state dump` and tests).
  static Status ReadSnapshot(const std::string& dir,
                             const std::function<void(uint32_t key_group, std::string_view key, int64_t value)>& fn);
  // Reads every entry of every state of a stored snapshot.
  static Status ReadStates(const std::string& dir, const StateEntryFn& fn);
  // Checks the stored snapshot `dir` without applying it (a restore's pre-flight): its SHARED
  // list, that every file it lists exists, every changelog segment's checksum and entries,
  // and every block checksum of its database. NotFound / Corruption naming `dir` or the file.
  static Status VerifySnapshot(const std::string& dir);
  // Writes the stored snapshot `dir` as a whole RocksDB database at `target` (which must not
  // exist): what a savepoint holds of a changelog checkpoint (state/savepoint.h).
  static Status WriteFullSnapshot(const std::string& dir, const std::string& target);

 private:
  class KeyedView;
  RocksDbStateStore(std::string dir, rocksdb::DB* db, StateBackendOptions options);
  static Status Create(const std::string& work_dir, const StateBackendOptions& options, bool start_changelog,
                       std::unique_ptr<RocksDbStateStore>* out);
  // The column family of `state` (a StateDescriptor encoding), created when missing.
  Status Family(const std::string& state, rocksdb::ColumnFamilyHandle** out);
  Status Upload(const std::string& staged, const std::string& checkpoint_dir, uint64_t* bytes);

  // ---- Changelog checkpoints (options_.changelog).
  struct Materialization {
    uint64_t id = 0;       // 0: none yet (an empty database); a restored snapshot's is 1
    std::string dir;       // the local RocksDB checkpoint (hard links into dir_)
    std::vector<std::string> files;  // its file names
    uint64_t up_to = 0;    // the last segment it holds
    uint64_t bytes = 0;    // the size of its files: the state's, for state.materialize_ratio
  };
  struct Segment {
    uint64_t seq = 0;
    uint64_t bytes = 0;
  };
  // Starts the materializer. With `stage`, the database already holds state (a rescaled
  // restore): it is materialized first, synchronously, so that checkpoints reference it. With
  // `snapshot` (a restore by the fast path: the database is that snapshot's, `refs` its SHARED
  // list), the snapshot's files are the first materialization and its segments the first
  // segments (loaded into memory by the restore, not into the database: the materializer
  // applies them before its first materialization).
  Status StartChangelog(bool stage, const std::string* snapshot = nullptr,
                        const std::vector<SharedFileRef>* refs = nullptr);
  void StopChangelog();
  Status PersistChangelog(const StateDelta& delta, const std::string& checkpoint_dir, uint64_t* bytes);
  void MaterializerLoop() EXCLUDES(mu_);
  // True when the segments since current_ outgrew state.materialize_ratio times its size.
  bool SizeTriggered() const REQUIRES(mu_);
  // Applies the local segments `seqs` (ascending), flushes and stages a new
  // materialization (materializer thread, or restore before it starts).
  Status MaterializeOnce(const std::vector<uint64_t>& seqs) EXCLUDES(mu_);
  // The materializer, after it applied segments: merges the default state's sorted runs into
  // one when they add up to kCompactRunsAt times the largest or number more than
  // kMaxSortedRuns (each materialization ingests a file over the whole key range, which RocksDB
  // would otherwise keep as a run of its own: a restore would read every one). Gives up
  // (Aborted) once stopping_ is set.
  Status CompactSortedRuns();
  bool ChangelogOn() const;
  // Adds this database's directory in shared_dir (`mine`) and shared_dir to `syncs` while
  // shared_dirs_unsynced_ (the caller clears it once they are synced).
  void AddSharedDirSyncs(const std::string& mine, DeferredSyncs* syncs) const;
  // Holds the lock of shared_dir's checkpoint directory (state/shared_files.h), which a
  // collection in this process or another (the coordinator's, for a worker) also takes.
  Status LockShared(SharedFilesLock* lock) const;
  std::string SharedSubdir() const;  // this database's directory in shared_dir
  std::string SegmentPath(uint64_t seq) const;  // a local segment
  std::string SharedPath(const Materialization& m, const std::string& name) const;

  const std::string dir_;
  rocksdb::DB* db_;
  const StateBackendOptions options_;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> families_;  // named states; not the default
  std::map<std::string, std::string> uploaded_;  // SST name in dir_ -> its path in shared_dir
  std::string token_;                            // prefix of this database's shared file names
  uint64_t staged_ = 0;                          // Stage() calls so far
  // Links were made in shared_dir whose directory fsyncs have not succeeded yet (a checkpoint
  // failed between them): the next checkpoint fsyncs those directories even if it links
  // nothing new, since it lists the same files. The persister thread's.
  bool shared_dirs_unsynced_ = false;

  // Changelog state. The persister thread owns last_seq_; mu_ guards the rest.
  uint64_t last_seq_ = 0;  // the newest segment written
  Mutex mu_;
  CondVar cv_;
  Materialization current_ GUARDED_BY(mu_);         // what checkpoints reference
  std::vector<Segment> segments_ GUARDED_BY(mu_);  // local segments, ascending (those > current_.up_to are live)
  std::vector<std::pair<uint64_t, std::string>> retired_ GUARDED_BY(mu_);  // (id, dir) of those current_ replaced
  bool stop_ GUARDED_BY(mu_) = false;
  bool checkpointed_ GUARDED_BY(mu_) = false;  // a checkpoint was persisted since the store opened
  std::atomic<bool> stopping_{false};  // stop_, read by a running materialization between batches
  std::thread materializer_;
};

}  // namespace cairn

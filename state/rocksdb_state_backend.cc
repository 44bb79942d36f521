// The RocksDB state backend: KeyedInt64State in memory, a RocksDbStateStore per subtask on
// disk. Everything it does is RocksDbStateStore's; this adapts it to the StateBackend seam.
#include <memory>
#include <utility>

#include "state/rocksdb_state_store.h"
#include "state/state_backend.h"

namespace cairn {

namespace {

class RocksDbStateBackend : public StateBackend {
 public:
  Status CreateKeyedState(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                          std::unique_ptr<KeyedInt64State>* state, std::unique_ptr<StateStore>* store) const override {
    std::unique_ptr<RocksDbStateStore> db;
    CAIRN_RETURN_IF_ERROR(RocksDbStateStore::Create(work_dir, &db));
    *state = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
    *store = std::move(db);
    return Status::OK();
  }

  Status RestoreKeyedState(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                           uint32_t max_parallelism, KeyGroupRange key_groups, std::unique_ptr<KeyedInt64State>* state,
                           std::unique_ptr<StateStore>* store) const override {
    auto restored = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
    std::unique_ptr<RocksDbStateStore> db;
    CAIRN_RETURN_IF_ERROR(RocksDbStateStore::Restore(snapshots, work_dir, restored.get(), &db));
    *state = std::move(restored);
    *store = std::move(db);
    return Status::OK();
  }

  Status ReadSnapshot(const std::string& dir, const KeyedEntryFn& fn) const override {
    return RocksDbStateStore::ReadSnapshot(dir, fn);
  }
};

}  // namespace

std::unique_ptr<StateBackend> NewRocksDbStateBackend() { return std::make_unique<RocksDbStateBackend>(); }

}  // namespace cairn

// The state backends: `heap` (KeyedInt64State and HeapKeyedStateBackend in memory, a
// RocksDbStateStore per subtask persisting their deltas) and `rocksdb` (the RocksDbStateStore
// itself, read and written directly). Everything on disk is RocksDbStateStore's; this adapts it
// to the StateBackend seam.
#include <memory>
#include <utility>

#include "state/heap_keyed_state.h"
#include "state/rocksdb_state_store.h"
#include "state/state_backend.h"

namespace cairn {

Status StateBackend::CreateKeyed(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                                 KeyedSubtaskState* out) const {
  CAIRN_RETURN_IF_ERROR(CreateKeyedState(work_dir, max_parallelism, key_groups, &out->int64, &out->store));
  out->keyed = std::make_unique<HeapKeyedStateBackend>(out->int64.get());
  return Status::OK();
}

Status StateBackend::RestoreKeyed(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                                  uint32_t max_parallelism, KeyGroupRange key_groups, KeyedSubtaskState* out,
                                  const std::atomic<bool>* /*stop*/) const {
  CAIRN_RETURN_IF_ERROR(
      RestoreKeyedState(snapshots, work_dir, max_parallelism, key_groups, &out->int64, &out->store));
  out->keyed = std::make_unique<HeapKeyedStateBackend>(out->int64.get());
  return Status::OK();
}

Status StateBackend::ReadStates(const std::string& dir, const StateEntryFn& fn) const {
  static const StateDescriptor kDefault{StateKind::kValue, Serializer<int64_t>::kName, kDefaultStateName};
  std::string v;
  return ReadSnapshot(dir, [&](uint32_t kg, std::string_view key, int64_t value) {
    v.clear();
    Serializer<int64_t>::Write(value, &v);
    fn(StateEntry{&kDefault, kg, key, {}, v});
  });
}

Status StateBackend::VerifySnapshot(const std::string& dir) const {
  return ReadStates(dir, [](const StateEntry&) {});
}

namespace {

class RocksDbStateBackend : public StateBackend {
 public:
  explicit RocksDbStateBackend(StateBackendOptions options) : options_(std::move(options)) {}

  Status CreateKeyedState(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                          std::unique_ptr<KeyedInt64State>* state, std::unique_ptr<StateStore>* store) const override {
    std::unique_ptr<RocksDbStateStore> db;
    CAIRN_RETURN_IF_ERROR(RocksDbStateStore::Create(work_dir, options_, &db));
    *state = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
    *store = std::move(db);
    return Status::OK();
  }

  Status RestoreKeyedState(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                           uint32_t max_parallelism, KeyGroupRange key_groups, std::unique_ptr<KeyedInt64State>* state,
                           std::unique_ptr<StateStore>* store) const override {
    auto restored = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
    std::unique_ptr<RocksDbStateStore> db;
    CAIRN_RETURN_IF_ERROR(
        RocksDbStateStore::Restore(snapshots, work_dir, options_, key_groups, restored.get(), nullptr, &db));
    *state = std::move(restored);
    *store = std::move(db);
    return Status::OK();
  }

  Status CreateKeyed(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                     KeyedSubtaskState* out) const override {
    std::unique_ptr<RocksDbStateStore> db;
    CAIRN_RETURN_IF_ERROR(RocksDbStateStore::Create(work_dir, options_, &db));
    return Finish(std::move(db), max_parallelism, key_groups, nullptr, nullptr, out);
  }

  Status RestoreKeyed(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                      uint32_t max_parallelism, KeyGroupRange key_groups, KeyedSubtaskState* out,
                      const std::atomic<bool>* stop) const override {
    std::unique_ptr<KeyedInt64State> int64;
    std::unique_ptr<HeapKeyedStateBackend> heap;
    if (options_.kind == StateBackendOptions::Kind::kHeap) {
      int64 = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
      heap = std::make_unique<HeapKeyedStateBackend>(int64.get());
    }
    std::unique_ptr<RocksDbStateStore> db;
    CAIRN_RETURN_IF_ERROR(
        RocksDbStateStore::Restore(snapshots, work_dir, options_, key_groups, int64.get(), heap.get(), &db, stop));
    return Finish(std::move(db), max_parallelism, key_groups, std::move(int64), std::move(heap), out);
  }

  Status ReadSnapshot(const std::string& dir, const KeyedEntryFn& fn) const override {
    return RocksDbStateStore::ReadSnapshot(dir, fn);
  }
  Status ReadStates(const std::string& dir, const StateEntryFn& fn) const override {
    return RocksDbStateStore::ReadStates(dir, fn);
  }
  Status VerifySnapshot(const std::string& dir) const override { return RocksDbStateStore::VerifySnapshot(dir); }

 private:
  Status Finish(std::unique_ptr<RocksDbStateStore> db, uint32_t max_parallelism, KeyGroupRange key_groups,
                std::unique_ptr<KeyedInt64State> int64, std::unique_ptr<HeapKeyedStateBackend> heap,
                KeyedSubtaskState* out) const {
    if (options_.kind == StateBackendOptions::Kind::kRocksDb) {
      out->keyed = db->NewKeyedBackend(max_parallelism, key_groups);
    } else {
      if (int64 == nullptr) int64 = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
      if (heap == nullptr) heap = std::make_unique<HeapKeyedStateBackend>(int64.get());
      out->keyed = std::move(heap);
      out->int64 = std::move(int64);
    }
    out->store = std::move(db);
    return Status::OK();
  }

  const StateBackendOptions options_;
};

}  // namespace

std::unique_ptr<StateBackend> NewStateBackend(const StateBackendOptions& options) {
  return std::make_unique<RocksDbStateBackend>(options);
}

std::unique_ptr<StateBackend> NewRocksDbStateBackend() { return NewStateBackend(StateBackendOptions{}); }

}  // namespace cairn

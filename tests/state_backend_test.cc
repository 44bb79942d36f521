// Specification of the StateBackend seam, with the RocksDB backend used only through the
// interface: a subtask's keyed state is created empty, its deltas persist as checkpoints, and
// a restore gives each subtask exactly the entries of its key groups, whatever the parallelism
// of the subtasks that took the checkpoints.
#include "state/state_backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace cairn {
namespace {

using testing::ScratchDir;

constexpr uint32_t kMaxParallelism = 128;

using Entries = std::map<std::string, int64_t>;

// One keyed subtask as the runtime holds it: what the operator uses, and where it persists.
struct Subtask {
  std::unique_ptr<KeyedInt64State> state;
  std::unique_ptr<StateStore> store;
};

KeyGroupRange RangeOf(uint32_t subtask, uint32_t parallelism) {
  return KeyGroupRange::ForSubtask(subtask, kMaxParallelism, parallelism);
}

bool Owns(const KeyGroupRange& range, const std::string& key) {
  return range.Contains(KeyGroupOf(KeyHash(key), kMaxParallelism));
}

Entries StateEntries(const KeyedInt64State& s) {
  Entries m;
  s.ForEach([&](std::string_view k, int64_t v) { m[std::string(k)] = v; });
  return m;
}

Entries SnapshotEntries(const StateBackend& backend, const std::string& dir) {
  Entries m;
  Status st = backend.ReadSnapshot(dir, [&](uint32_t key_group, std::string_view k, int64_t v) {
    EXPECT_EQ(key_group, KeyGroupOf(KeyHash(k), kMaxParallelism)) << k;
    m[std::string(k)] = v;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return m;
}

// The entries of `all` whose key lies in `range`.
Entries Within(const Entries& all, const KeyGroupRange& range) {
  Entries m;
  for (const auto& [k, v] : all)
    if (Owns(range, k)) m[k] = v;
  return m;
}

// 200 words, each with its own value.
Entries Words() {
  Entries m;
  for (int i = 0; i < 200; ++i) m["word" + std::to_string(i)] = i * 7 - 300;
  return m;
}

// What a task and its persister do for one checkpoint: the operator writes, the task takes the
// delta, the persister persists it as a checkpoint at `dir`.
void Checkpoint(Subtask* s, const Entries& changes, const std::string& dir) {
  for (const auto& [k, v] : changes) s->state->Put(k, v);
  std::unique_ptr<StateDelta> delta = s->state->TakeDelta();
  uint64_t bytes = 0;
  Status st = s->store->PersistAndCheckpoint(*delta, dir, &bytes);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

Subtask Create(const StateBackend& backend, const std::string& work_dir, KeyGroupRange range) {
  Subtask s;
  Status st = backend.CreateKeyedState(work_dir, kMaxParallelism, range, &s.state, &s.store);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

Subtask Restore(const StateBackend& backend, const std::vector<KeyedSnapshotHandle>& snapshots,
                const std::string& work_dir, KeyGroupRange range) {
  Subtask s;
  Status st = backend.RestoreKeyedState(snapshots, work_dir, kMaxParallelism, range, &s.state, &s.store);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

TEST(StateBackendTest, CreatedStateIsEmptyAndOwnsItsKeyGroups) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  Subtask s = Create(*backend, scratch / "work/op-1", RangeOf(1, 3));
  ASSERT_NE(s.state, nullptr);
  ASSERT_NE(s.store, nullptr);
  EXPECT_EQ(s.state->size(), 0u);
  EXPECT_EQ(s.state->max_parallelism(), kMaxParallelism);
  EXPECT_EQ(s.state->range().first, RangeOf(1, 3).first);
  EXPECT_EQ(s.state->range().last, RangeOf(1, 3).last);
}

TEST(StateBackendTest, CheckpointHoldsEverythingPersistedSoFarWithTheLatestValues) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  Subtask s = Create(*backend, scratch / "work/op-0", RangeOf(0, 1));
  Checkpoint(&s, {{"a", 1}, {"b", 2}}, scratch / "chk-1/op-0/keyed");
  Checkpoint(&s, {{"b", 20}, {"c", 3}}, scratch / "chk-2/op-0/keyed");
  EXPECT_EQ(SnapshotEntries(*backend, scratch / "chk-1/op-0/keyed"), (Entries{{"a", 1}, {"b", 2}}));
  EXPECT_EQ(SnapshotEntries(*backend, scratch / "chk-2/op-0/keyed"), (Entries{{"a", 1}, {"b", 20}, {"c", 3}}));
}

TEST(StateBackendTest, RestoreAtTheSameParallelismGivesBackEachSubtasksEntries) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  const Entries words = Words();
  std::vector<KeyedSnapshotHandle> handles;
  for (uint32_t i = 0; i < 2; ++i) {
    Subtask s = Create(*backend, scratch / ("work/op-" + std::to_string(i)), RangeOf(i, 2));
    const std::string dir = scratch / ("chk-1/op-" + std::to_string(i) + "/keyed");
    Checkpoint(&s, Within(words, RangeOf(i, 2)), dir);
    handles.push_back(KeyedSnapshotHandle{dir, RangeOf(i, 2)});
  }
  for (uint32_t i = 0; i < 2; ++i) {
    Subtask r = Restore(*backend, {handles[i]}, scratch / ("restored/op-" + std::to_string(i)), RangeOf(i, 2));
    ASSERT_NE(r.state, nullptr);
    EXPECT_EQ(StateEntries(*r.state), Within(words, RangeOf(i, 2))) << "subtask " << i;
  }
}

TEST(StateBackendTest, RestoreAtAnotherParallelismGivesEachSubtaskExactlyItsKeyGroups) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  const Entries words = Words();
  std::vector<KeyedSnapshotHandle> handles;  // taken at parallelism 2
  for (uint32_t i = 0; i < 2; ++i) {
    Subtask s = Create(*backend, scratch / ("work/op-" + std::to_string(i)), RangeOf(i, 2));
    const std::string dir = scratch / ("chk-1/op-" + std::to_string(i) + "/keyed");
    Checkpoint(&s, Within(words, RangeOf(i, 2)), dir);
    handles.push_back(KeyedSnapshotHandle{dir, RangeOf(i, 2)});
  }
  Entries union_of_subtasks;
  for (uint32_t j = 0; j < 3; ++j) {  // restored at parallelism 3, each from every snapshot
    Subtask r = Restore(*backend, handles, scratch / ("restored/op-" + std::to_string(j)), RangeOf(j, 3));
    ASSERT_NE(r.state, nullptr);
    const Entries got = StateEntries(*r.state);
    EXPECT_EQ(got, Within(words, RangeOf(j, 3))) << "subtask " << j;
    union_of_subtasks.insert(got.begin(), got.end());
  }
  EXPECT_EQ(union_of_subtasks, words);
}

TEST(StateBackendTest, RestoredEntriesAreInTheNextCheckpointButNotInItsDelta) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  const KeyGroupRange all{0, kMaxParallelism - 1};
  Subtask s = Create(*backend, scratch / "work/op-0", all);
  Checkpoint(&s, {{"a", 1}, {"b", 2}}, scratch / "chk-1/op-0/keyed");
  Subtask r = Restore(*backend, {{scratch / "chk-1/op-0/keyed", all}}, scratch / "restored/op-0", all);
  ASSERT_NE(r.state, nullptr);
  r.state->Put("c", 3);
  std::unique_ptr<StateDelta> delta = r.state->TakeDelta();
  ASSERT_EQ(delta->entries.size(), 1u);  // only what changed since the restore
  EXPECT_EQ(delta->key(delta->entries[0]), "c");
  uint64_t bytes = 0;
  Status st = r.store->PersistAndCheckpoint(*delta, scratch / "chk-2/op-0/keyed", &bytes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(SnapshotEntries(*backend, scratch / "chk-2/op-0/keyed"), (Entries{{"a", 1}, {"b", 2}, {"c", 3}}));
}

TEST(StateBackendTest, RestoreOfAMissingSnapshotIsNotFoundNamingItAndReturnsNothing) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  const KeyGroupRange all{0, kMaxParallelism - 1};
  const std::string missing = scratch / "chk-9/op-0/keyed";
  Subtask r;
  Status st = backend->RestoreKeyedState({{missing, all}}, scratch / "restored/op-0", kMaxParallelism, all, &r.state,
                                         &r.store);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.ToString();
  EXPECT_EQ(r.state, nullptr);
  EXPECT_EQ(r.store, nullptr);
}

TEST(StateBackendTest, ReadSnapshotOfAMissingDirectoryIsNotFoundNamingIt) {
  ScratchDir scratch;
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  const std::string missing = scratch / "chk-9/op-0/keyed";
  Status st = backend->ReadSnapshot(missing, [](uint32_t, std::string_view, int64_t) {});
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace cairn

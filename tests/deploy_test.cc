// Specification of deploying keyed state (OpenSubtasks in engine/runtime/deploy.h) against a
// StateBackend that is not RocksDB: the runtime asks the backend for each keyed subtask's state,
// with the snapshots whose key groups overlap the subtask's own, and hands the operator what
// the backend made.
#include "engine/runtime/deploy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "jobs/registry.h"
#include "state/checkpoint_layout.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint32_t kMaxP = 128;

// A StateStore that keeps nothing.
class NullStore : public StateStore {
 public:
  Status PersistAndCheckpoint(const StateDelta&, const std::string&, uint64_t*) override { return Status::OK(); }
};

// A backend whose snapshots are maps in memory, named by their directory; it records what it
// was asked (from the restoring threads, hence the mutex).
class InMemoryBackend : public StateBackend {
 public:
  struct Call {
    std::string work_dir;
    KeyGroupRange key_groups;
    std::vector<std::string> snapshots;  // empty: CreateKeyedState
  };

  Status CreateKeyedState(const std::string& work_dir, uint32_t max_parallelism, KeyGroupRange key_groups,
                          std::unique_ptr<KeyedInt64State>* state, std::unique_ptr<StateStore>* store) const override {
    Record(Call{work_dir, key_groups, {}});
    *state = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
    *store = std::make_unique<NullStore>();
    return Status::OK();
  }

  Status RestoreKeyedState(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                           uint32_t max_parallelism, KeyGroupRange key_groups, std::unique_ptr<KeyedInt64State>* state,
                           std::unique_ptr<StateStore>* store) const override {
    Call call{work_dir, key_groups, {}};
    for (const KeyedSnapshotHandle& h : snapshots) call.snapshots.push_back(h.dir);
    Record(call);
    auto restored = std::make_unique<KeyedInt64State>(max_parallelism, key_groups);
    for (const KeyedSnapshotHandle& h : snapshots) {
      auto it = snapshots_.find(h.dir);
      if (it == snapshots_.end()) return Status::NotFound("no snapshot " + h.dir);
      for (const auto& [key, value] : it->second)
        if (key_groups.Contains(KeyGroupOf(KeyHash(key), max_parallelism))) restored->LoadEntry(key, value);
    }
    *state = std::move(restored);
    *store = std::make_unique<NullStore>();
    return Status::OK();
  }

  Status ReadSnapshot(const std::string& dir, const KeyedEntryFn& fn) const override {
    auto it = snapshots_.find(dir);
    if (it == snapshots_.end()) return Status::NotFound("no snapshot " + dir);
    for (const auto& [key, value] : it->second) fn(KeyGroupOf(KeyHash(key), kMaxP), key, value);
    return Status::OK();
  }

  void AddSnapshot(const std::string& dir, std::map<std::string, int64_t> entries) { snapshots_[dir] = std::move(entries); }

  // The calls, by work directory.
  std::map<std::string, Call> calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }

 private:
  void Record(const Call& c) const {
    std::lock_guard<std::mutex> l(mu_);
    calls_[c.work_dir] = c;
  }
  std::map<std::string, std::map<std::string, int64_t>> snapshots_;
  mutable std::mutex mu_;
  mutable std::map<std::string, Call> calls_;
};

OperatorConfig Config(const std::string& id, const std::string& type, uint32_t parallelism) {
  OperatorConfig c;
  c.id = id;
  c.type = type;
  c.parallelism = parallelism;
  for (const ParamSpec& p : FindOperatorType(type)->params) c.params[p.name] = p.default_value;
  return c;
}

// A job whose only deployed chain is `count` at `parallelism` (keyed), followed by a discard
// sink in the same chain (not keyed).
JobSpec CountJob(uint32_t parallelism) {
  JobSpec spec;
  spec.name = "deploy-test";
  spec.max_parallelism = kMaxP;
  spec.operators.push_back(Config("count", "count", parallelism));
  spec.operators.push_back(Config("sink", "discard_sink", parallelism));
  return spec;
}

std::vector<SubtaskChain> CountSubtasks(const JobSpec& spec) {
  std::vector<SubtaskChain> subtasks;
  const uint32_t p = spec.operators[0].parallelism;
  for (uint32_t i = 0; i < p; ++i) {
    SubtaskChain st{0, i, {}};
    for (const OperatorConfig& oc : spec.operators) {
      ChainedOperator c;
      c.op = FindOperatorType(oc.type)->create(oc);
      c.ctx.operator_id = oc.id;
      c.ctx.subtask = i;
      c.ctx.parallelism = p;
      c.ctx.max_parallelism = kMaxP;
      c.ctx.key_groups = KeyGroupRange::ForSubtask(i, kMaxP, p);
      st.ops.push_back(std::move(c));
    }
    subtasks.push_back(std::move(st));
  }
  return subtasks;
}

TEST(DeployTest, KeyedSubtasksWithNothingToRestoreGetFreshStateFromTheBackend) {
  const JobSpec spec = CountJob(2);
  std::vector<SubtaskChain> subtasks = CountSubtasks(spec);
  InMemoryBackend backend;
  Status s = OpenSubtasks(spec, backend, RestorePlan{}, "/work", &subtasks);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto calls = backend.calls();
  ASSERT_EQ(calls.size(), 2u);  // the keyed operator's subtasks only
  for (uint32_t i = 0; i < 2; ++i) {
    const std::string work = WorkingStatePath("/work", "count", i);
    ASSERT_EQ(calls.count(work), 1u) << work;
    EXPECT_THAT(calls.at(work).snapshots, IsEmpty());
    EXPECT_EQ(calls.at(work).key_groups.first, KeyGroupRange::ForSubtask(i, kMaxP, 2).first);
    ChainedOperator& count = subtasks[i].ops[0];
    ASSERT_NE(count.keyed_state, nullptr);
    EXPECT_EQ(count.ctx.keyed_state, count.keyed_state.get());
    ASSERT_NE(count.keyed_store, nullptr);
    EXPECT_NE(count.keyed_store->store, nullptr);
    ChainedOperator& sink = subtasks[i].ops[1];
    EXPECT_EQ(sink.keyed_state, nullptr);
    EXPECT_EQ(sink.ctx.keyed_state, nullptr);
  }
}

TEST(DeployTest, EachKeyedSubtaskRestoresFromTheSnapshotsThatOverlapItsKeyGroups) {
  // Taken at parallelism 2 (key groups 0-63 and 64-127), restored at 3 (0-42, 43-85, 86-127).
  InMemoryBackend backend;
  RestorePlan restore;
  restore.active = true;
  restore.keyed["count"] = {KeyedSnapshotHandle{"/chk-1/count-0/keyed", KeyGroupRange::ForSubtask(0, kMaxP, 2)},
                            KeyedSnapshotHandle{"/chk-1/count-1/keyed", KeyGroupRange::ForSubtask(1, kMaxP, 2)}};
  std::map<std::string, int64_t> all, first, second;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "key" + std::to_string(i);
    all[key] = i;
    (KeyGroupRange::ForSubtask(0, kMaxP, 2).Contains(KeyGroupOf(KeyHash(key), kMaxP)) ? first : second)[key] = i;
  }
  backend.AddSnapshot("/chk-1/count-0/keyed", first);
  backend.AddSnapshot("/chk-1/count-1/keyed", second);
  const JobSpec spec = CountJob(3);
  std::vector<SubtaskChain> subtasks = CountSubtasks(spec);

  Status s = OpenSubtasks(spec, backend, restore, "/work", &subtasks);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto calls = backend.calls();
  EXPECT_THAT(calls.at(WorkingStatePath("/work", "count", 0)).snapshots, ElementsAre("/chk-1/count-0/keyed"));
  EXPECT_THAT(calls.at(WorkingStatePath("/work", "count", 1)).snapshots,
              ElementsAre("/chk-1/count-0/keyed", "/chk-1/count-1/keyed"));
  EXPECT_THAT(calls.at(WorkingStatePath("/work", "count", 2)).snapshots, ElementsAre("/chk-1/count-1/keyed"));
  size_t keys = 0;
  for (SubtaskChain& st : subtasks) {
    ASSERT_NE(st.ops[0].ctx.keyed_state, nullptr);
    keys += st.ops[0].ctx.keyed_state->size();
  }
  EXPECT_EQ(keys, all.size());
}

TEST(DeployTest, AFailedRestoreFailsTheDeployWithTheBackendsStatus) {
  InMemoryBackend backend;  // holds no snapshot
  RestorePlan restore;
  restore.active = true;
  restore.keyed["count"] = {KeyedSnapshotHandle{"/chk-1/count-0/keyed", KeyGroupRange{0, kMaxP - 1}}};
  const JobSpec spec = CountJob(1);
  std::vector<SubtaskChain> subtasks = CountSubtasks(spec);
  Status s = OpenSubtasks(spec, backend, restore, "/work", &subtasks);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_THAT(s.message(), ::testing::HasSubstr("/chk-1/count-0/keyed"));
}

}  // namespace
}  // namespace cairn

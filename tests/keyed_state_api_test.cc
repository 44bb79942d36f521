// The keyed-state API (state/keyed_state_api.h) on both backends: every state kind, removal,
// change tracking, snapshot and restore round trips, restore into the other backend, rescaling,
// and the shared files of incremental checkpoints (state/shared_files.h).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/file_util.h"
#include "engine/base/storage_faults.h"
#include "engine/dataflow/operator_capabilities.h"
#include "jobs/registry.h"
#include "state/checkpoint_layout.h"
#include "state/heap_keyed_state.h"
#include "state/keyed_state_api.h"
#include "state/rocksdb_state_store.h"
#include "state/changelog_segment.h"
#include "state/shared_files.h"
#include "state/state_backend.h"
#include "tests/test_util.h"
#include "tests/tree_snapshot.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr uint32_t kMaxP = 128;
const KeyGroupRange kAll{0, kMaxP - 1};
using Kind = StateBackendOptions::Kind;

std::string KindName(Kind k) { return k == Kind::kHeap ? "heap" : "rocksdb"; }

// A backend and whether it writes changelog checkpoints (state.changelog, the heap backend's).
// Materialized every millisecond, so that materializations race with the checkpoints.
struct Mode {
  Kind kind;
  bool changelog = false;
  uint64_t materialize_ms = 1;
  Mode(Kind k, bool c = false, uint64_t ms = 1) : kind(k), changelog(c), materialize_ms(ms) {}  // NOLINT: a Kind is a mode
};
std::string ModeName(const Mode& m) { return KindName(m.kind) + (m.changelog ? "_changelog" : ""); }

// A point in 2D, with a user Serializer (how a job adds its own value type).
struct Point {
  int64_t x = 0, y = 0;
  bool operator==(const Point& o) const { return x == o.x && y == o.y; }
};

}  // namespace
}  // namespace cairn::testing

namespace cairn {
template <>
struct Serializer<testing::Point> {
  static constexpr const char* kName = "test.Point";
  static void Write(const testing::Point& p, std::string* out) {
    Serializer<int64_t>::Write(p.x, out);
    Serializer<int64_t>::Write(p.y, out);
  }
  static bool Read(std::string_view s, testing::Point* p) {
    return s.size() == 16 && Serializer<int64_t>::Read(s.substr(0, 8), &p->x) &&
           Serializer<int64_t>::Read(s.substr(8), &p->y);
  }
};
}  // namespace cairn

namespace cairn::testing {
namespace {

// One subtask's state made through a backend, with the checkpoints it took.
struct Subtask {
  KeyedSubtaskState s;
  KeyedStateBackend* keyed() { return s.keyed.get(); }
  // Snapshot (synchronous part) and persist (asynchronous part) into `dir`.
  void Checkpoint(const std::string& dir, uint64_t* bytes = nullptr) {
    std::unique_ptr<StateDelta> delta;
    ASSERT_TRUE(s.keyed->Snapshot(&delta).ok());
    uint64_t b = 0;
    Status st = s.store->PersistAndCheckpoint(*delta, dir, &b);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (bytes != nullptr) *bytes = b;
  }
};

StateBackendOptions Options(Mode mode, const std::string& root) {
  StateBackendOptions o;
  o.kind = mode.kind;
  o.changelog = mode.changelog;
  o.materialize_interval_ms = mode.materialize_ms;
  o.block_cache = 1 << 20;
  o.write_buffer = 1 << 20;
  if (!root.empty()) o.shared_dir = SharedDir(root);
  return o;
}

void Create(Mode kind, const std::string& root, const std::string& work, KeyGroupRange range, Subtask* out) {
  auto backend = NewStateBackend(Options(kind, root));
  Status st = backend->CreateKeyed(work, kMaxP, range, &out->s);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

void Restore(Mode kind, const std::string& root, const std::vector<KeyedSnapshotHandle>& snaps, const std::string& work,
             KeyGroupRange range, Subtask* out) {
  auto backend = NewStateBackend(Options(kind, root));
  Status st = backend->RestoreKeyed(snaps, work, kMaxP, range, &out->s, nullptr);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// Every entry of every state of a stored snapshot, as "state|key|user key" -> value bytes.
std::map<std::string, std::string> ReadAll(const std::string& dir) {
  std::map<std::string, std::string> all;
  Status st = NewStateBackend(StateBackendOptions{})->ReadStates(dir, [&](const StateEntry& e) {
    all[e.state->Encode() + "|" + std::string(e.key) + "|" + std::string(e.user_key)] = std::string(e.value);
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return all;
}

class KeyedStateApiTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { Create(GetParam(), root(), dir_ / "work/op-0", kAll, &sub_); }
  std::string root() const { return dir_ / "ck"; }
  std::string chk(int id) const { return root() + "/chk-" + std::to_string(id) + "/op-0/keyed"; }

  ScratchDir dir_;
  Subtask sub_;
};

TEST_P(KeyedStateApiTest, ValueStatePutGetClear) {
  ValueState<int64_t>* v;
  ASSERT_TRUE(sub_.keyed()->GetValueState("v", &v).ok());
  int64_t got = 0;
  EXPECT_FALSE(v->Get("a", &got));
  v->Put("a", 5);
  v->Put("b", -7);
  ASSERT_TRUE(v->Get("a", &got));
  EXPECT_EQ(got, 5);
  v->Put("a", 6);
  ASSERT_TRUE(v->Get("a", &got));
  EXPECT_EQ(got, 6);
  v->Clear("a");
  EXPECT_FALSE(v->Get("a", &got));
  ASSERT_TRUE(v->Get("b", KeyHash("b"), &got));
  EXPECT_EQ(got, -7);
  // Declared again: the same state.
  ValueState<int64_t>* again;
  ASSERT_TRUE(sub_.keyed()->GetValueState("v", &again).ok());
  EXPECT_EQ(again, v);
}

TEST_P(KeyedStateApiTest, EveryBuiltInAndAUserTypeRoundTrips) {
  ValueState<double>* d = nullptr;
  ValueState<bool>* b = nullptr;
  ValueState<std::string>* s = nullptr;
  ValueState<Point>* p = nullptr;
  ASSERT_TRUE(sub_.keyed()->GetValueState("d", &d).ok());
  ASSERT_TRUE(sub_.keyed()->GetValueState("b", &b).ok());
  ASSERT_TRUE(sub_.keyed()->GetValueState("s", &s).ok());
  ASSERT_TRUE(sub_.keyed()->GetValueState("p", &p).ok());
  d->Put("k", 2.5);
  b->Put("k", true);
  s->Put("k", std::string("hi\0there", 8));
  p->Put("k", Point{3, -4});
  double dv = 0;
  bool bv = false;
  std::string sv;
  Point pv;
  ASSERT_TRUE(d->Get("k", &dv));
  ASSERT_TRUE(b->Get("k", &bv));
  ASSERT_TRUE(s->Get("k", &sv));
  ASSERT_TRUE(p->Get("k", &pv));
  EXPECT_EQ(dv, 2.5);
  EXPECT_TRUE(bv);
  EXPECT_EQ(sv, std::string("hi\0there", 8));
  EXPECT_EQ(pv, (Point{3, -4}));
}

TEST_P(KeyedStateApiTest, MapStatePerKeyWithRemoveAndOrderedIteration) {
  MapState<std::string, int64_t>* m;
  ASSERT_TRUE(sub_.keyed()->GetMapState("m", &m).ok());
  m->Put("alice", "x", 1);
  m->Put("alice", "y", 2);
  m->Put("alice", "w", 3);
  m->Put("al", "ice", 9);  // a key that is a prefix of another must not see its entries
  m->Put("bob", "x", 10);
  int64_t v = 0;
  ASSERT_TRUE(m->Get("alice", "y", &v));
  EXPECT_EQ(v, 2);
  EXPECT_TRUE(m->Contains("bob", "x"));
  EXPECT_FALSE(m->Contains("bob", "y"));
  m->Remove("alice", "y");
  EXPECT_FALSE(m->Get("alice", "y", &v));
  std::vector<std::pair<std::string, int64_t>> seen;
  m->ForEach("alice", [&](const std::string& uk, const int64_t& uv) { seen.emplace_back(uk, uv); });
  EXPECT_THAT(seen, ElementsAre(Pair("w", 3), Pair("x", 1)));
  seen.clear();
  m->ForEach("al", [&](const std::string& uk, const int64_t& uv) { seen.emplace_back(uk, uv); });
  EXPECT_THAT(seen, ElementsAre(Pair("ice", 9)));
  m->Clear("alice");
  seen.clear();
  m->ForEach("alice", [&](const std::string& uk, const int64_t& uv) { seen.emplace_back(uk, uv); });
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(m->Contains("bob", "x"));
}

TEST_P(KeyedStateApiTest, ListStateAddGetUpdateClear) {
  ListState<std::string>* l;
  ASSERT_TRUE(sub_.keyed()->GetListState("l", &l).ok());
  std::vector<std::string> got;
  l->Get("k", &got);
  EXPECT_TRUE(got.empty());
  l->Add("k", "a");
  l->Add("k", "");
  l->Add("k", "c");
  l->Get("k", &got);
  EXPECT_THAT(got, ElementsAre("a", "", "c"));
  l->Update("k", {"z"});
  l->Get("k", &got);
  EXPECT_THAT(got, ElementsAre("z"));
  l->Clear("k");
  l->Get("k", &got);
  EXPECT_TRUE(got.empty());
  l->Add("k", "again");
  l->Get("k", &got);
  EXPECT_THAT(got, ElementsAre("again"));
}

TEST_P(KeyedStateApiTest, SeveralNamedStatesSideBySideAndTheDefaultOne) {
  ValueState<int64_t>* total;
  MapState<std::string, double>* prices;
  ValueState<int64_t>* def;
  ASSERT_TRUE(sub_.keyed()->GetValueState("total", &total).ok());
  ASSERT_TRUE(sub_.keyed()->GetMapState("prices", &prices).ok());
  ASSERT_TRUE(sub_.keyed()->GetValueState(kDefaultStateName, &def).ok());
  total->Put("k", 1);
  prices->Put("k", "eur", 1.5);
  def->Put("k", 42);
  int64_t t = 0, d = 0;
  double p = 0;
  ASSERT_TRUE(total->Get("k", &t));
  ASSERT_TRUE(prices->Get("k", "eur", &p));
  ASSERT_TRUE(def->Get("k", &d));
  EXPECT_EQ(t, 1);
  EXPECT_EQ(p, 1.5);
  EXPECT_EQ(d, 42);
  if (GetParam().kind == Kind::kHeap) {  // the default state is the fast table
    int64_t fast = 0;
    ASSERT_TRUE(sub_.s.int64->Get("k", &fast));
    EXPECT_EQ(fast, 42);
  }
}

TEST_P(KeyedStateApiTest, RedeclaringWithAnotherKindOrTypeIsRefused) {
  ValueState<int64_t>* v;
  ASSERT_TRUE(sub_.keyed()->GetValueState("x", &v).ok());
  ValueState<double>* d;
  Status s = sub_.keyed()->GetValueState("x", &d);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.message(), ::testing::HasSubstr("'x' is a value state of int64, not a value state of double"));
  ListState<int64_t>* l;
  EXPECT_TRUE(sub_.keyed()->GetListState("x", &l).IsInvalidArgument());
  MapState<std::string, std::string>* m;
  EXPECT_TRUE(sub_.keyed()->GetMapState(kDefaultStateName, &m).IsInvalidArgument());
}

TEST_P(KeyedStateApiTest, AKeyOfAnotherSubtaskIsNeverStoredAndNamed) {
  Subtask half;
  ASSERT_NO_FATAL_FAILURE(
      Create(GetParam(), root(), dir_ / "work/half-0", KeyGroupRange::ForSubtask(0, kMaxP, 2), &half));
  ValueState<int64_t>* v;
  ASSERT_TRUE(half.keyed()->GetValueState("v", &v).ok());
  std::string foreign;
  for (int i = 0; foreign.empty(); ++i) {
    std::string k = "k" + std::to_string(i);
    if (!half.keyed()->range().Contains(KeyGroupOf(KeyHash(k), kMaxP))) foreign = k;
  }
  v->Put(foreign, 1);
  int64_t got;
  EXPECT_FALSE(v->Get(foreign, &got));
  EXPECT_FALSE(half.keyed()->foreign_key_error().ok());
  EXPECT_THAT(half.keyed()->foreign_key_error().message(), ::testing::HasSubstr(foreign));
}

TEST_P(KeyedStateApiTest, SnapshotRestoreRoundTripOfEveryKindOnBothBackends) {
  ValueState<int64_t>* def;
  ValueState<std::string>* v;
  MapState<std::string, int64_t>* m;
  ListState<int64_t>* l;
  ASSERT_TRUE(sub_.keyed()->GetValueState(kDefaultStateName, &def).ok());
  ASSERT_TRUE(sub_.keyed()->GetValueState("v", &v).ok());
  ASSERT_TRUE(sub_.keyed()->GetMapState("m", &m).ok());
  ASSERT_TRUE(sub_.keyed()->GetListState("l", &l).ok());
  for (int i = 0; i < 100; ++i) {
    const std::string k = "key" + std::to_string(i);
    def->Put(k, i);
    v->Put(k, "v" + std::to_string(i));
    m->Put(k, "a", i);
    m->Put(k, "b", -i);
    l->Add(k, i);
    l->Add(k, i + 1);
  }
  sub_.Checkpoint(chk(1));
  // Changes after the first checkpoint, removals included.
  def->Clear("key0");
  v->Clear("key1");
  m->Remove("key2", "a");
  l->Clear("key3");
  def->Put("key4", 400);
  sub_.Checkpoint(chk(2));
  def->Put("key5", 999);  // after the last checkpoint: not in it

  for (Mode into : {Mode(Kind::kHeap), Mode(Kind::kRocksDb), Mode(Kind::kHeap, true)}) {
    SCOPED_TRACE("restored into " + ModeName(into));
    Subtask r;
    ASSERT_NO_FATAL_FAILURE(
        Restore(into, root(), {{chk(2), kAll}}, dir_ / ("restored-" + ModeName(into) + "/op-0"), kAll, &r));
    ValueState<int64_t>* rdef;
    ValueState<std::string>* rv;
    MapState<std::string, int64_t>* rm;
    ListState<int64_t>* rl;
    ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &rdef).ok());
    ASSERT_TRUE(r.keyed()->GetValueState("v", &rv).ok());
    ASSERT_TRUE(r.keyed()->GetMapState("m", &rm).ok());
    ASSERT_TRUE(r.keyed()->GetListState("l", &rl).ok());
    int64_t n = 0;
    std::string s;
    std::vector<int64_t> list;
    EXPECT_FALSE(rdef->Get("key0", &n));
    EXPECT_FALSE(rv->Get("key1", &s));
    EXPECT_FALSE(rm->Contains("key2", "a"));
    EXPECT_TRUE(rm->Contains("key2", "b"));
    rl->Get("key3", &list);
    EXPECT_TRUE(list.empty());
    ASSERT_TRUE(rdef->Get("key4", &n));
    EXPECT_EQ(n, 400);
    ASSERT_TRUE(rdef->Get("key5", &n));
    EXPECT_EQ(n, 5);
    ASSERT_TRUE(rv->Get("key99", &s));
    EXPECT_EQ(s, "v99");
    ASSERT_TRUE(rm->Get("key50", "b", &n));
    EXPECT_EQ(n, -50);
    rl->Get("key60", &list);
    EXPECT_THAT(list, ElementsAre(60, 61));
    // A restored state declared with another type is refused.
    ValueState<double>* wrong;
    EXPECT_TRUE(r.keyed()->GetValueState("v", &wrong).IsInvalidArgument());
    // The restored state keeps working, and checkpoints again.
    rdef->Put("key0", 7);
    r.Checkpoint(dir_ / ("again-" + ModeName(into) + "/keyed"));
    auto all = ReadAll(dir_ / ("again-" + ModeName(into) + "/keyed"));
    EXPECT_EQ(all.count("value/int64/|key0|"), 1u);
  }
}

// The heap backend only: the RocksDB backend's snapshot is a local RocksDB checkpoint.
class HeapKeyedStateApiTest : public KeyedStateApiTest {};

TEST_P(HeapKeyedStateApiTest, TheHeapSnapshotHoldsOnlyWhatChangedIncludingRemovals) {
  ValueState<int64_t>* v;
  MapState<std::string, int64_t>* m;
  ASSERT_TRUE(sub_.keyed()->GetValueState("v", &v).ok());
  ASSERT_TRUE(sub_.keyed()->GetMapState("m", &m).ok());
  for (int i = 0; i < 10; ++i) v->Put("k" + std::to_string(i), i);
  m->Put("a", "x", 1);
  std::unique_ptr<StateDelta> d;
  ASSERT_TRUE(sub_.keyed()->Snapshot(&d).ok());
  EXPECT_EQ(d->named.size(), 11u);
  ASSERT_TRUE(sub_.keyed()->Snapshot(&d).ok());
  EXPECT_TRUE(d->empty());  // nothing changed since
  v->Put("k3", 33);
  v->Clear("k4");
  m->Remove("a", "x");
  v->Put("k5", 55);
  v->Put("k5", 56);  // twice: once in the delta, with the later value
  ASSERT_TRUE(sub_.keyed()->Snapshot(&d).ok());
  std::map<std::string, std::pair<bool, std::string>> got;
  for (const auto& e : d->named) {
    uint32_t kg;
    std::string_view key, uk;
    StateDescriptor desc;
    ASSERT_TRUE(StateDescriptor::Decode(e.state, &desc));
    ASSERT_TRUE(DecodeEntryKey(desc.kind, e.key, &kg, &key, &uk));
    got[desc.name + ":" + std::string(key) + ":" + std::string(uk)] = {e.deleted, e.value};
  }
  std::string v56;
  Serializer<int64_t>::Write(56, &v56);
  std::string v33;
  Serializer<int64_t>::Write(33, &v33);
  EXPECT_THAT(got, UnorderedElementsAre(Pair("v:k3:", Pair(false, v33)), Pair("v:k4:", Pair(true, "")),
                                        Pair("m:a:x", Pair(true, "")), Pair("v:k5:", Pair(false, v56))));
}

TEST_P(KeyedStateApiTest, RescaleSplitsEveryStateByKeyGroup) {
  // Two old subtasks of parallelism 2 write keys of their own; restored at 1 and at 3.
  std::map<std::string, int64_t> expected;
  std::vector<KeyedSnapshotHandle> snaps;
  for (uint32_t i = 0; i < 2; ++i) {
    const KeyGroupRange range = KeyGroupRange::ForSubtask(i, kMaxP, 2);
    Subtask old;
    ASSERT_NO_FATAL_FAILURE(Create(GetParam(), root(), dir_ / ("old/op-" + std::to_string(i)), range, &old));
    ValueState<int64_t>* def;
    MapState<std::string, int64_t>* m;
    ASSERT_TRUE(old.keyed()->GetValueState(kDefaultStateName, &def).ok());
    ASSERT_TRUE(old.keyed()->GetMapState("m", &m).ok());
    for (int k = 0; k < 400; ++k) {
      const std::string key = "w" + std::to_string(k);
      if (!range.Contains(KeyGroupOf(KeyHash(key), kMaxP))) continue;
      def->Put(key, k);
      m->Put(key, "u", k * 2);
      expected[key] = k;
    }
    const std::string dir = root() + "/chk-1/op-" + std::to_string(i) + "/keyed";
    old.Checkpoint(dir);
    snaps.push_back({dir, range});
  }
  ASSERT_EQ(expected.size(), 400u);
  for (uint32_t p : {1u, 3u}) {
    for (Mode into : {Mode(Kind::kHeap), Mode(Kind::kRocksDb), Mode(Kind::kHeap, true)}) {
      SCOPED_TRACE("parallelism " + std::to_string(p) + " into " + ModeName(into));
      size_t seen = 0;
      for (uint32_t j = 0; j < p; ++j) {
        const KeyGroupRange range = KeyGroupRange::ForSubtask(j, kMaxP, p);
        std::vector<KeyedSnapshotHandle> mine;
        for (const auto& h : snaps)
          if (h.key_groups.Overlaps(range)) mine.push_back(h);
        Subtask r;
        ASSERT_NO_FATAL_FAILURE(Restore(
            into, root(), mine, dir_ / ("p" + std::to_string(p) + ModeName(into) + "/op-" + std::to_string(j)), range, &r));
        ValueState<int64_t>* def;
        MapState<std::string, int64_t>* m;
        ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &def).ok());
        ASSERT_TRUE(r.keyed()->GetMapState("m", &m).ok());
        for (const auto& [key, value] : expected) {
          if (!range.Contains(KeyGroupOf(KeyHash(key), kMaxP))) continue;
          int64_t n = -1;
          ASSERT_TRUE(def->Get(key, &n)) << key;
          EXPECT_EQ(n, value);
          ASSERT_TRUE(m->Get(key, "u", &n)) << key;
          EXPECT_EQ(n, value * 2);
          ++seen;
        }
        // Exactly its own key groups: as many entries as owned keys (both states).
        size_t owned = 0;
        for (const auto& [key, value] : expected) owned += range.Contains(KeyGroupOf(KeyHash(key), kMaxP));
        size_t stored = 0;
        def->ForEach([&](std::string_view, const int64_t&) { ++stored; });
        EXPECT_EQ(stored, owned);
      }
      EXPECT_EQ(seen, expected.size());
    }
  }
}

// A restore asked to stop (a SIGTERM during `cairn run`'s restore) gives up with Aborted and
// removes its working state, on the unchanged-parallelism path and the rescale path, into
// every backend; the checkpoint it read is left as it was. Unset, the flag changes nothing.
TEST_P(KeyedStateApiTest, ARestoreAskedToStopGivesUpAndRemovesItsWorkingState) {
  ValueState<int64_t>* def;
  MapState<std::string, int64_t>* m;
  ASSERT_TRUE(sub_.keyed()->GetValueState(kDefaultStateName, &def).ok());
  ASSERT_TRUE(sub_.keyed()->GetMapState("m", &m).ok());
  for (int i = 0; i < 300; ++i) {
    std::string k = "key";
    k += std::to_string(i);
    def->Put(k, i);
    m->Put(k, "a", -i);
  }
  sub_.Checkpoint(chk(1));
  def->Put("key7", 70);  // a second checkpoint: an incremental one, or a changelog segment
  sub_.Checkpoint(chk(2));
  const Tree before = TreeSnapshot(root());
  const KeyGroupRange half = KeyGroupRange::ForSubtask(0, kMaxP, 2);
  for (Mode into : {Mode(Kind::kHeap), Mode(Kind::kRocksDb), Mode(Kind::kHeap, true)}) {
    for (KeyGroupRange range : {kAll, half}) {
      SCOPED_TRACE("into " + ModeName(into) + ", key groups " + range.ToString());
      auto backend = NewStateBackend(Options(into, root()));
      const std::string work = dir_ / ("r-" + ModeName(into) + "-" + std::to_string(range.last));
      std::atomic<bool> stop{true};
      KeyedSubtaskState out;
      Status st = backend->RestoreKeyed({{chk(2), kAll}}, work, kMaxP, range, &out, &stop);
      EXPECT_TRUE(st.IsAborted()) << st.ToString();
      EXPECT_THAT(st.message(), HasSubstr("was stopped"));
      EXPECT_EQ(out.keyed, nullptr);
      EXPECT_FALSE(PathExists(work));
      stop.store(false);
      st = backend->RestoreKeyed({{chk(2), kAll}}, work, kMaxP, range, &out, &stop);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ValueState<int64_t>* rdef;
      ASSERT_TRUE(out.keyed->GetValueState(kDefaultStateName, &rdef).ok());
      int64_t n = -1;
      if (range.Contains(KeyGroupOf(KeyHash("key7"), kMaxP))) {
        ASSERT_TRUE(rdef->Get("key7", &n));
        EXPECT_EQ(n, 70);
      }
    }
  }
  EXPECT_TRUE(SameTree(before, TreeSnapshot(root())));
}

// The count operator's largest keys (the end-of-run summary) on every backend: the heap's fast
// path and the RocksDB scan. 2,000 keys with counts 1..53, so that many tie at every count and
// the candidates are cut many times while the scan runs; the ranking to match is computed here.
TEST_P(KeyedStateApiTest, CountNamesItsLargestKeysWithTiesBrokenByKey) {
  OperatorConfig config;
  config.id = "count";
  config.type = "count";
  config.key_by = {"key"};
  std::unique_ptr<Operator> count = FindOperatorType("count")->create(config);
  OperatorContext ctx;
  ctx.operator_id = "count";
  ctx.keyed_state = sub_.s.int64.get();
  ctx.keyed = sub_.keyed();
  ASSERT_TRUE(count->Open(ctx).ok());
  std::map<std::string, int64_t> expected_counts;
  std::vector<std::string> words;
  for (int i = 0; i < 2000; ++i) {
    std::string key = "w";
    key += std::to_string(i);
    const int64_t n = (i * 7919) % 53 + 1;
    expected_counts[key] = n;
    for (int64_t j = 0; j < n; ++j) words.push_back(key);
  }
  std::shuffle(words.begin(), words.end(), std::mt19937(42));
  for (size_t i = 0; i < words.size(); i += 1000) {
    RecordBatch in, out;
    for (size_t j = i; j < std::min(words.size(), i + 1000); ++j) in.Add(words[j]);
    ASSERT_TRUE(count->Process(0, in, &out).ok());
  }
  std::vector<std::pair<std::string, int64_t>> ranked(expected_counts.begin(), expected_counts.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  ranked.resize(10);
  const auto* summary = dynamic_cast<const KeyedSummary*>(count.get());
  ASSERT_NE(summary, nullptr);
  std::vector<std::pair<std::string, int64_t>> top;
  summary->TopKeys(10, &top);
  EXPECT_EQ(top, ranked);
  top.clear();
  summary->TopKeys(0, &top);
  EXPECT_TRUE(top.empty());
}

// The runner merges the subtasks' lists of top keys with KeepTopKeys: the same ranking as each
// operator's own list, cut to k.
TEST(KeepTopKeysTest, MergesListsLargestFirstTiesBySmallerKeyAndKeepsK) {
  std::vector<std::pair<std::string, int64_t>> keys = {{"b", 5}, {"d", 9}, {"a", 5}, {"c", 2}};
  std::vector<std::pair<std::string, int64_t>> other = {{"e", 9}, {"ab", 5}, {"f", -1}};
  keys.insert(keys.end(), other.begin(), other.end());
  KeepTopKeys(5, &keys);
  const std::vector<std::pair<std::string, int64_t>> want = {{"d", 9}, {"e", 9}, {"a", 5}, {"ab", 5}, {"b", 5}};
  EXPECT_EQ(keys, want);
  KeepTopKeys(10, &keys);  // fewer than k: all of them, in order
  EXPECT_EQ(keys, want);
  KeepTopKeys(0, &keys);
  EXPECT_TRUE(keys.empty());
  EXPECT_TRUE(RanksBefore(3, "z", 2, "a"));
  EXPECT_TRUE(RanksBefore(3, "a", 3, "b"));
  EXPECT_FALSE(RanksBefore(3, "a", 3, "a"));
}

INSTANTIATE_TEST_SUITE_P(Backends, KeyedStateApiTest,
                         ::testing::Values(Mode(Kind::kHeap), Mode(Kind::kRocksDb), Mode(Kind::kHeap, true)),
                         [](const ::testing::TestParamInfo<Mode>& info) { return ModeName(info.param); });
INSTANTIATE_TEST_SUITE_P(Backends, HeapKeyedStateApiTest, ::testing::Values(Mode(Kind::kHeap), Mode(Kind::kHeap, true)),
                         [](const ::testing::TestParamInfo<Mode>& info) { return ModeName(info.param); });

// ---- Incremental checkpoints and shared files.

std::set<std::string> FilesBelow(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) out.insert(it->path().lexically_normal().string());
  return out;
}

std::set<std::string> Referenced(const std::string& keyed_dir) {
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  EXPECT_TRUE(ReadSharedList(keyed_dir, &refs, &incremental).ok());
  EXPECT_TRUE(incremental) << keyed_dir;
  std::set<std::string> out;
  for (const auto& r : refs) out.insert(r.path);
  return out;
}

TEST(SharedFilesTest, UnchangedFilesAreReferencedNotUploadedAgain) {
  for (Kind kind : {Kind::kHeap, Kind::kRocksDb}) {
    SCOPED_TRACE(KindName(kind));
    ScratchDir dir;
    const std::string root = dir / "ck";
    Subtask s;
    ASSERT_NO_FATAL_FAILURE(Create(kind, root, root + "/_work/run-1/op-0", kAll, &s));
    ValueState<std::string>* v;
    ASSERT_TRUE(s.keyed()->GetValueState("v", &v).ok());
    for (int i = 0; i < 20000; ++i) v->Put("key" + std::to_string(i), std::string(100, 'x'));
    uint64_t first = 0, second = 0;
    s.Checkpoint(root + "/chk-1/op-0/keyed", &first);
    v->Put("key7", "changed");
    s.Checkpoint(root + "/chk-2/op-0/keyed", &second);
    const auto one = Referenced(root + "/chk-1/op-0/keyed");
    const auto two = Referenced(root + "/chk-2/op-0/keyed");
    ASSERT_FALSE(one.empty());
    // Checkpoint 2 shares checkpoint 1's files and adds the one its change made.
    for (const auto& f : one) EXPECT_EQ(two.count(f), 1u) << f;
    EXPECT_GT(two.size(), one.size());
    EXPECT_LT(second * 10, first) << "the second checkpoint uploaded more than its change";
    for (const auto& f : two) EXPECT_TRUE(PathExists(f)) << f;
    // No SST file inside the checkpoint directory itself.
    for (const auto& f : FilesBelow(root + "/chk-2")) EXPECT_FALSE(f.size() > 4 && f.substr(f.size() - 4) == ".sst") << f;
    auto all = ReadAll(root + "/chk-2/op-0/keyed");
    EXPECT_EQ(all.size(), 20000u);
    EXPECT_EQ(all.at("value/string/v|key7|"), "changed");
  }
}

TEST(SharedFilesTest, CollectionKeepsEveryReferencedFileAndDeletesTheRest) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  const std::string shared = SharedDir(root);
  ASSERT_TRUE(CreateDirs(shared + "/op-0").ok());
  for (const char* f : {"a.sst", "b.sst", "c.sst", "stray.sst"}) WriteText(shared + "/op-0/" + f, f);
  auto list = [&](int id, std::vector<std::string> names) {
    const std::string keyed = root + "/chk-" + std::to_string(id) + "/op-0/keyed";
    ASSERT_TRUE(CreateDirs(keyed).ok());
    std::vector<SharedFileRef> refs;
    for (const auto& n : names) refs.push_back({n, shared + "/op-0/" + n});
    ASSERT_TRUE(WriteSharedList(keyed, refs).ok());
  };
  list(1, {"a.sst", "b.sst"});
  list(2, {"b.sst", "c.sst"});
  uint64_t deleted = 0;
  ASSERT_TRUE(CollectSharedGarbage(root, &deleted).ok());
  EXPECT_EQ(deleted, 1u);  // the stray one
  EXPECT_EQ(FilesBelow(shared), (std::set<std::string>{shared + "/op-0/a.sst", shared + "/op-0/b.sst",
                                                         shared + "/op-0/c.sst"}));
  // Checkpoint 1 goes (retention): its own file goes, the one checkpoint 2 shares stays.
  ASSERT_TRUE(RemoveAll(root + "/chk-1").ok());
  ASSERT_TRUE(CollectSharedGarbage(root, &deleted).ok());
  EXPECT_EQ(deleted, 1u);
  EXPECT_EQ(FilesBelow(shared), (std::set<std::string>{shared + "/op-0/b.sst", shared + "/op-0/c.sst"}));
  ASSERT_TRUE(RemoveAll(root + "/chk-2").ok());
  ASSERT_TRUE(CollectSharedGarbage(root, &deleted).ok());
  EXPECT_EQ(deleted, 2u);
  EXPECT_TRUE(FilesBelow(shared).empty());
}

// The lock is across processes (a cluster job's workers upload into the shared directory the
// coordinator's process collects): while a forked child holds it, this process cannot flock
// <checkpoint.dir>/_shared_lock, and a collection started meanwhile waits for it, so it sees
// the SHARED list the child writes before releasing and keeps the file that list names.
TEST(SharedFilesTest, TheLockHoldsAcrossProcessesAndACollectionWaitsForIt) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  const std::string shared = SharedDir(root);
  ASSERT_TRUE(CreateDirs(shared + "/op-0").ok());
  const std::string file = shared + "/op-0/a.sst";
  WriteText(file, "a");  // uploaded, not listed yet: garbage to a collection that runs now
  const std::string keyed = root + "/chk-1/op-0/keyed";
  ASSERT_TRUE(CreateDirs(keyed).ok());
  int locked[2], go[2];
  ASSERT_EQ(pipe(locked), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SharedFilesLock lock;
    if (!lock.Acquire(root).ok()) _exit(3);
    char c = 1;
    if (write(locked[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(4);
    if (!WriteSharedList(keyed, {SharedFileRef{"a.sst", file}}).ok()) _exit(5);
    _exit(0);  // releases the lock
  }
  char c = 0;
  ASSERT_EQ(read(locked[0], &c, 1), 1);
  const int fd = open(SharedLockPath(root).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_NE(flock(fd, LOCK_EX | LOCK_NB), 0);
  EXPECT_EQ(errno, EWOULDBLOCK);
  uint64_t deleted = 7;
  Status collected;
  std::thread collector([&] { collected = CollectSharedGarbage(root, &deleted); });
  ASSERT_EQ(write(go[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  collector.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(collected.ok()) << collected.ToString();
  EXPECT_EQ(deleted, 0u);
  EXPECT_TRUE(PathExists(file));
  // Released with the child: this process takes it now.
  EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  close(fd);
  for (int p : {locked[0], locked[1], go[0], go[1]}) close(p);
}

TEST(SharedFilesTest, ADamagedListKeepsEveryFile) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  const std::string shared = SharedDir(root);
  ASSERT_TRUE(CreateDirs(shared + "/op-0").ok());
  WriteText(shared + "/op-0/a.sst", "a");
  ASSERT_TRUE(CreateDirs(root + "/chk-1/op-0/keyed").ok());
  WriteText(root + "/chk-1/op-0/keyed/SHARED", "not a checksummed blob");
  uint64_t deleted = 7;
  ASSERT_TRUE(CollectSharedGarbage(root, &deleted).ok());
  EXPECT_EQ(deleted, 0u);
  EXPECT_TRUE(PathExists(shared + "/op-0/a.sst"));
}

TEST(SharedFilesTest, AfterOlderCheckpointsAreDeletedTheNewestStillRestores) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(Kind::kRocksDb, root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<int64_t>* v;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &v).ok());
  for (int c = 1; c <= 4; ++c) {
    for (int i = 0; i < 1000; ++i) v->Put("k" + std::to_string(c * 1000 + i), c);
    s.Checkpoint(root + "/chk-" + std::to_string(c) + "/op-0/keyed");
  }
  const auto newest = Referenced(root + "/chk-4/op-0/keyed");
  const auto oldest = Referenced(root + "/chk-1/op-0/keyed");
  // Retention keeps one: every file the newest references stays (some were uploaded by
  // checkpoint 1), the others go.
  for (int c = 1; c <= 3; ++c) ASSERT_TRUE(RemoveAll(root + "/chk-" + std::to_string(c)).ok());
  ASSERT_TRUE(CollectSharedGarbage(root).ok());
  EXPECT_EQ(FilesBelow(SharedDir(root)), newest);
  size_t shared_with_oldest = 0;
  for (const auto& f : oldest) shared_with_oldest += newest.count(f);
  EXPECT_GT(shared_with_oldest, 0u) << "no file of checkpoint 1 is still referenced: nothing was shared";
  auto all = ReadAll(root + "/chk-4/op-0/keyed");
  EXPECT_EQ(all.size(), 4000u);
  // A restore of it (both backends) works and the state checkpoints again.
  for (Kind into : {Kind::kHeap, Kind::kRocksDb}) {
    Subtask r;
    ASSERT_NO_FATAL_FAILURE(
        Restore(into, root, {{root + "/chk-4/op-0/keyed", kAll}}, root + "/_work/run-2/op-" + KindName(into), kAll, &r));
    ValueState<int64_t>* rv;
    ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &rv).ok());
    int64_t n = 0;
    ASSERT_TRUE(rv->Get("k1000", &n));
    EXPECT_EQ(n, 1);
  }
}

// ---- Changelog checkpoints (state.changelog).

uint32_t GroupOf(const std::string& key) { return KeyGroupOf(KeyHash(key), kMaxP); }

// The changelog segments and the other (materialization) files a keyed snapshot lists.
void SplitRefs(const std::string& keyed_dir, size_t* segments, size_t* others) {
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  ASSERT_TRUE(ReadSharedList(keyed_dir, &refs, &incremental).ok());
  *segments = *others = 0;
  for (const auto& r : refs) ++*(IsChangelogSegmentName(r.name) ? segments : others);
}

TEST(ChangelogTest, CheckpointsListTheMaterializationAndTheSegmentsSinceAndReadBackTheirState) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
  const Mode never(Kind::kHeap, true, 3600 * 1000);  // no background materialization in this test
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(never, root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<std::string>* v;
  ListState<int64_t>* l;
  ASSERT_TRUE(s.keyed()->GetValueState("v", &v).ok());
  ASSERT_TRUE(s.keyed()->GetListState("l", &l).ok());
  ValueState<int64_t>* def;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
  for (int i = 0; i < 5000; ++i) {
    v->Put("key" + std::to_string(i), std::string(50, 'x'));
    def->Put("key" + std::to_string(i), i);
  }
  uint64_t first = 0, second = 0;
  s.Checkpoint(chk(1), &first);
  v->Put("key7", "changed");
  v->Clear("key8");
  def->Clear("key9");
  l->Add("key10", 3);
  s.Checkpoint(chk(2), &second);
  def->Put("key11", -11);
  s.Checkpoint(chk(3));
  // Before any materialization a checkpoint is its segments only, each holding its delta.
  size_t segments = 0, others = 0;
  SplitRefs(chk(3), &segments, &others);
  EXPECT_EQ(segments, 3u);
  EXPECT_EQ(others, 0u);
  EXPECT_LT(second * 10, first) << "the second segment holds more than its delta";
  auto at1 = ReadAll(chk(1));
  EXPECT_EQ(at1.size(), 10000u);
  EXPECT_EQ(at1.at("value/string/v|key7|"), std::string(50, 'x'));
  auto at3 = ReadAll(chk(3));
  EXPECT_EQ(at3.size(), 10000u - 2 + 1);
  EXPECT_EQ(at3.at("value/string/v|key7|"), "changed");
  EXPECT_EQ(at3.count("value/string/v|key8|"), 0u);
  EXPECT_EQ(at3.count("value/int64/|key9|"), 0u);

  // A restore at the same parallelism rewrites nothing: its first checkpoint lists the
  // restored checkpoint's segments again, and its own.
  Subtask r;
  ASSERT_NO_FATAL_FAILURE(Restore(never, root, {{chk(3), kAll}}, root + "/_work/run-2/op-0", kAll, &r));
  ValueState<int64_t>* rdef;
  ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &rdef).ok());
  int64_t n = 0;
  ASSERT_TRUE(rdef->Get("key11", &n));
  EXPECT_EQ(n, -11);
  EXPECT_FALSE(rdef->Get("key9", &n));
  rdef->Put("key12", 1200);
  r.Checkpoint(chk(4));
  SplitRefs(chk(4), &segments, &others);
  EXPECT_EQ(segments, 4u);
  EXPECT_EQ(others, 0u);
  auto at4 = ReadAll(chk(4));
  EXPECT_EQ(at4.size(), at3.size());
  EXPECT_EQ(at4.at("value/int64/|key12|"), std::string("\xb0\x04\0\0\0\0\0\0", 8));

  // A rescaled restore rewrites its key groups into a new database and materializes it: its
  // checkpoint lists that materialization and one segment.
  const KeyGroupRange half = KeyGroupRange::ForSubtask(1, kMaxP, 2);
  Subtask h;
  ASSERT_NO_FATAL_FAILURE(Restore(never, root, {{chk(3), kAll}}, root + "/_work/run-2/op-1", half, &h));
  ValueState<int64_t>* hdef;
  ASSERT_TRUE(h.keyed()->GetValueState(kDefaultStateName, &hdef).ok());
  std::string owned;
  for (int i = 0; owned.empty(); ++i)
    if (half.Contains(GroupOf("key" + std::to_string(i)))) owned = "key" + std::to_string(i);
  hdef->Put(owned, -1);
  const std::string hchk = root + "/chk-4/op-1/keyed";
  h.Checkpoint(hchk);
  SplitRefs(hchk, &segments, &others);
  EXPECT_EQ(segments, 1u);
  EXPECT_GT(others, 0u);
  auto half4 = ReadAll(hchk);
  size_t in_half = 0;
  for (const auto& [k, val] : at3) {
    const std::string key = k.substr(k.find('|') + 1, k.rfind('|') - k.find('|') - 1);
    in_half += half.Contains(GroupOf(key));
  }
  EXPECT_EQ(half4.size(), in_half);
  EXPECT_EQ(half4.at("value/int64/|" + owned + "|"), std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8));

  // Retention keeps checkpoint 4 only: every file it lists stays, the rest go.
  for (int c = 1; c <= 3; ++c) ASSERT_TRUE(RemoveAll(root + "/chk-" + std::to_string(c)).ok());
  ASSERT_TRUE(CollectSharedGarbage(root).ok());
  std::set<std::string> listed = Referenced(chk(4));
  for (const auto& f : Referenced(hchk)) listed.insert(f);
  EXPECT_EQ(FilesBelow(SharedDir(root)), listed);
  EXPECT_EQ(ReadAll(hchk), half4);
  EXPECT_EQ(ReadAll(chk(4)), at4);
  // What a savepoint holds of it: one whole database, no SHARED list, the same entries.
  const std::string full = dir / "savepoint-keyed";
  Status st = RocksDbStateStore::WriteFullSnapshot(chk(4), full);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(PathExists(full + "/SHARED"));
  EXPECT_EQ(ReadAll(full), at4);
  // Both other backends restore the changelog checkpoint.
  for (Kind into : {Kind::kHeap, Kind::kRocksDb}) {
    Subtask o;
    ASSERT_NO_FATAL_FAILURE(
        Restore(into, root, {{chk(4), kAll}}, root + "/_work/run-3/op-" + KindName(into), kAll, &o));
    ValueState<int64_t>* ov;
    ASSERT_TRUE(o.keyed()->GetValueState(kDefaultStateName, &ov).ok());
    ASSERT_TRUE(ov->Get("key12", &n));
    EXPECT_EQ(n, 1200);
  }
}

// A restore of many segments loads them a stripe of the table at a time, in groups of at most
// 255 (rocksdb_state_store.cc, LoadSegments), so one key's entries arrive out of the segments'
// order: the restored state still holds each key's newest entry. The writer's table grows
// between segments (its keys move), keys are removed and come back, a few hot keys change in
// every segment, and a named state's entries follow the default state's in each segment.
TEST(ChangelogTest, ARestoreOfHundredsOfSegmentsHoldsTheNewestEntryOfEveryKey) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
  const Mode never(Kind::kHeap, true, 3600 * 1000);  // no materialization: every segment stays listed
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(never, root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<int64_t>* def;
  ValueState<std::string>* named;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
  ASSERT_TRUE(s.keyed()->GetValueState("v", &named).ok());
  std::map<std::string, int64_t> want;            // absent: removed or never written
  std::map<std::string, std::string> want_named;
  std::mt19937_64 rng(20261208);
  auto key = [](uint64_t i) { return "key" + std::to_string(i); };
  int id = 0;
  // 40 segments while the table grows to 120K keys (its slots double several times), then
  // 260 small ones: 300 segments, two groups.
  for (int c = 0; c < 300; ++c) {
    const uint64_t keys = c < 40 ? 3000u * (c + 1) : 120000u;
    const int changes = c < 40 ? 6000 : 40;
    for (int j = 0; j < changes; ++j) {
      const std::string k = key(rng() % keys);
      if (rng() % 5 == 0) {
        def->Clear(k);
        want.erase(k);
      } else {
        const int64_t v = static_cast<int64_t>(rng() % 1000000) - 500000;
        def->Put(k, v);
        want[k] = v;
      }
    }
    for (uint64_t hot = 0; hot < 4; ++hot) {
      if ((c + hot) % 7 == 0) {
        def->Clear(key(hot));
        want.erase(key(hot));
      } else {
        def->Put(key(hot), c);
        want[key(hot)] = c;
      }
    }
    const std::string nk = key(rng() % keys);
    named->Put(nk, "at " + std::to_string(c));
    want_named[nk] = "at " + std::to_string(c);
    ASSERT_NO_FATAL_FAILURE(s.Checkpoint(chk(++id)));
  }
  size_t segments = 0, others = 0;
  SplitRefs(chk(id), &segments, &others);
  ASSERT_EQ(segments, 300u);
  ASSERT_EQ(others, 0u);
  Subtask r;
  ASSERT_NO_FATAL_FAILURE(Restore(never, root, {{chk(id), kAll}}, root + "/_work/run-2/op-0", kAll, &r));
  ValueState<int64_t>* rdef;
  ValueState<std::string>* rnamed;
  ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &rdef).ok());
  ASSERT_TRUE(r.keyed()->GetValueState("v", &rnamed).ok());
  size_t wrong = 0;
  for (uint64_t i = 0; i < 120000; ++i) {
    int64_t v = 0;
    const bool found = rdef->Get(key(i), &v);
    auto it = want.find(key(i));
    if (found != (it != want.end()) || (found && v != it->second)) {
      if (++wrong <= 5) ADD_FAILURE() << key(i) << ": restored " << (found ? std::to_string(v) : "nothing");
    }
  }
  EXPECT_EQ(wrong, 0u);
  for (const auto& [k, v] : want_named) {
    std::string got;
    ASSERT_TRUE(rnamed->Get(k, &got)) << k;
    EXPECT_EQ(got, v) << k;
  }
}

TEST(ChangelogTest, AFailedFsyncOfTheSharedDirectoryIsMadeByTheNextCheckpointThoughItLinksNothing) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  const std::string mine = SharedDir(root) + "/op-0";  // this store's directory in shared/
  // The first fsync of `mine` fails (EIO, injected), and the durability log shows the rest.
  // In this test process only; the path is this test's own.
  setenv("CAIRN_STORAGE_FAULT", ("eio:" + mine + "/.:0:1").c_str(), 1);
  setenv("CAIRN_DURABILITY_LOG", (dir / "durability.log").c_str(), 1);
  std::string error;
  ASSERT_TRUE(InitStorageFaults(&error)) << error;
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(Mode(Kind::kHeap, true, 3600 * 1000), root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<int64_t>* def;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
  for (int i = 0; i < 1000; ++i) def->Put("key" + std::to_string(i), i);
  std::unique_ptr<StateDelta> delta;
  ASSERT_TRUE(s.keyed()->Snapshot(&delta).ok());
  uint64_t bytes = 0;
  // Checkpoint 1 writes its segment and links it into shared/, then cannot fsync shared/op-0.
  Status st = s.s.store->PersistAndCheckpoint(*delta, root + "/chk-1/op-0/keyed", &bytes);
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_THAT(st.message(), ::testing::HasSubstr(mine));
  auto syncs_of_mine = [&] {
    size_t n = 0;
    std::istringstream in(ReadText(dir / "durability.log"));
    for (std::string line; std::getline(in, line);) n += line == "fsync-dir " + mine;
    return n;
  };
  EXPECT_EQ(syncs_of_mine(), 0u);
  // Checkpoint 2 has no changes: it lists checkpoint 1's segment, already linked, and links
  // nothing; its directory entry must still be made durable before the checkpoint is.
  s.Checkpoint(root + "/chk-2/op-0/keyed");
  EXPECT_EQ(syncs_of_mine(), 1u);
  auto all = ReadAll(root + "/chk-2/op-0/keyed");
  EXPECT_EQ(all.size(), 1000u);
  // Checkpoint 3, again without changes, has nothing left to make durable in shared/.
  s.Checkpoint(root + "/chk-3/op-0/keyed");
  EXPECT_EQ(syncs_of_mine(), 1u);
  testing::StopDurabilityLog();
  unsetenv("CAIRN_STORAGE_FAULT");
}

TEST(ChangelogTest, EveryCheckpointReadsBackItsStateWhileMaterializationsRunBetweenThem) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(Mode(Kind::kHeap, true, 1), root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<int64_t>* def;
  MapState<std::string, int64_t>* m;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
  ASSERT_TRUE(s.keyed()->GetMapState("m", &m).ok());
  std::map<std::string, int64_t> model, map_model;
  uint64_t x = 88172645463325252ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int c = 1; c <= 30; ++c) {
    for (int i = 0; i < 300; ++i) {
      const std::string k = "k" + std::to_string(next() % 2000);
      if (next() % 5 == 0) {
        def->Clear(k);
        model.erase(k);
        m->Remove(k, "u");
        map_model.erase(k);
      } else {
        const int64_t val = static_cast<int64_t>(next() % 1000);
        def->Put(k, val);
        model[k] = val;
        m->Put(k, "u", -val);
        map_model[k] = -val;
      }
    }
    s.Checkpoint(chk(c));
    std::map<std::string, int64_t> got, got_map;
    Status st = NewStateBackend(StateBackendOptions{})->ReadStates(chk(c), [&](const StateEntry& e) {
      int64_t val = 0;
      ASSERT_TRUE(Serializer<int64_t>::Read(e.value, &val));
      (e.state->name.empty() ? got : got_map)[std::string(e.key)] = val;
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(got, model) << "checkpoint " << c;
    ASSERT_EQ(got_map, map_model) << "checkpoint " << c;
    // Retention keeps the newest two.
    if (c > 2) {
      ASSERT_TRUE(RemoveAll(root + "/chk-" + std::to_string(c - 2)).ok());
    }
    ASSERT_TRUE(CollectSharedGarbage(root).ok());
  }
  std::set<std::string> referenced = Referenced(chk(29));
  for (const auto& f : Referenced(chk(30))) referenced.insert(f);
  EXPECT_EQ(FilesBelow(SharedDir(root)), referenced);
}

// Coalescing keeps the newest entry of each (state, key group, key), removals included, in key
// order; the older segments here hold many keys the newest lacks (the set grows).
TEST(ChangelogTest, CoalescingKeepsTheNewestEntryOfEachKeyInKeyOrder) {
  ScratchDir dir;
  std::map<std::pair<uint32_t, std::string>, std::pair<bool, int64_t>> model;  // (kg, key) -> (deleted, value)
  std::vector<std::string> paths;
  for (int seg = 0; seg < 3; ++seg) {
    StateDelta d;
    const int n = seg == 2 ? 10 : 5000;  // the newest is small
    for (int i = 0; i < n; ++i) {
      const std::string key = "k" + std::to_string((i * 7 + seg) % 6000);
      const bool deleted = (i + seg) % 11 == 0;
      d.entries.push_back(StateDelta::Entry{GroupOf(key), deleted, static_cast<uint32_t>(key.size()), d.keys.size(), seg * 100000 + i});
      d.keys += key;
      model[{GroupOf(key), key}] = {deleted, seg * 100000 + i};
    }
    d.named.push_back(StateDelta::NamedEntry{"value/int64/x", std::string("\0\1n", 3), "v" + std::to_string(seg), false});
    paths.push_back(dir / ("seg-" + std::to_string(seg)));
    ASSERT_TRUE(WriteChecksummedFile(paths.back(), EncodeChangelogSegment(d)).ok());
  }
  std::vector<std::string> buffers;
  std::vector<ChangelogEntry> out;
  Status st = CoalesceChangelogSegments(paths, &buffers, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.size(), model.size() + 1);
  size_t i = 0;
  for (const auto& [k, v] : model) {  // the default state ("") sorts first, by key group and key
    const ChangelogEntry& e = out[i++];
    EXPECT_TRUE(e.state.empty());
    EXPECT_EQ(e.key_group, k.first);
    EXPECT_EQ(e.key, k.second);
    EXPECT_EQ(e.deleted, v.first) << e.key;
    if (!v.first) {
      EXPECT_EQ(e.int64, v.second) << e.key;
    }
  }
  EXPECT_EQ(out.back().state, "value/int64/x");
  EXPECT_EQ(out.back().value, "v2");
}

// A segment of a delta a table took opens with that table's salt, key count and slot order
// (a hint for a restore's loading): readers find it with ChangelogSegmentTable and skip it
// when they visit the entries. A merged delta, whose order is no table's, has none.
TEST(ChangelogTest, ASegmentOfATablesDeltaNamesTheTableAndReadsBackTheSameEntries) {
  ScratchDir dir;
  KeyedInt64State table(kMaxP, KeyGroupRange{0, kMaxP - 1});
  for (int i = 0; i < 5000; ++i) table.Add("k" + std::to_string(i), i);
  std::unique_ptr<StateDelta> d = table.TakeDelta();
  ASSERT_TRUE(d->slot_order);  // every key changed: one pass over the slots
  ASSERT_EQ(d->table_keys, 5000u);
  const std::string bytes = EncodeChangelogSegment(*d);
  std::optional<SegmentTable> t = ChangelogSegmentTable(bytes);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->salt, d->table_salt);
  EXPECT_EQ(t->table_keys, 5000u);
  EXPECT_EQ(t->entries, d->entries.size());
  EXPECT_TRUE(t->slot_order);
  std::vector<std::pair<std::string, int64_t>> read;
  Status st = ParseChangelogSegment("seg", bytes, [&](const ChangelogEntry& e) {
    read.emplace_back(std::string(e.key), e.int64);
    return Status::OK();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(read.size(), d->entries.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].first, d->key(d->entries[i]));
    EXPECT_EQ(read[i].second, d->entries[i].value);
  }
  // A few keys of a large table: in slot order too (TakeDelta visits the changed slots in
  // order). A delta not in slot order (none a table takes now; segments of earlier versions)
  // says so in its table entry.
  table.Add("k7", 1);
  table.Add("k4999", 1);
  table.Add("k0", 1);
  std::unique_ptr<StateDelta> few = table.TakeDelta();
  EXPECT_TRUE(few->slot_order);
  ASSERT_EQ(few->entries.size(), 3u);
  t = ChangelogSegmentTable(EncodeChangelogSegment(*few));
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->slot_order);
  EXPECT_EQ(t->entries, 3u);
  few->slot_order = false;
  t = ChangelogSegmentTable(EncodeChangelogSegment(*few));
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(t->slot_order);
  // Merged over a failed checkpoint: no table's order.
  d->Merge(*few);
  EXPECT_FALSE(ChangelogSegmentTable(EncodeChangelogSegment(*d)).has_value());
  // A damaged table entry is corruption (the blob's checksum would catch it first on disk).
  std::string damaged = bytes;
  damaged[5] = 7;  // the flags: 0 or 1 only
  EXPECT_TRUE(ParseChangelogSegment("seg", damaged, [](const ChangelogEntry&) { return Status::OK(); }).IsCorruption());
}

// Keys of every length from 0 to 40 bytes (those of at most 16 bytes are copied in fixed-size
// pieces), taken from a table (keys in its arena) and merged (keys in the delta's own string),
// with removals: each reads back byte for byte.
TEST(ChangelogTest, KeysOfEveryShortLengthReadBackExactly) {
  KeyedInt64State table(kMaxP, KeyGroupRange{0, kMaxP - 1});
  std::map<std::string, int64_t> want;
  for (size_t len = 0; len <= 40; ++len) {
    std::string key(len, '\0');
    for (size_t i = 0; i < len; ++i) key[i] = static_cast<char>('a' + (i * 7 + len) % 26);
    table.Put(key, static_cast<int64_t>(len) * 1000 - 7);
    want[key] = static_cast<int64_t>(len) * 1000 - 7;
  }
  std::unique_ptr<StateDelta> d = table.TakeDelta();
  table.Delete(std::string());  // the empty key
  want.erase(std::string());
  std::unique_ptr<StateDelta> later = table.TakeDelta();
  StateDelta merged;
  merged.Merge(*d);
  merged.Merge(*later);
  for (const StateDelta* delta : {d.get(), &merged}) {
    std::map<std::string, int64_t> read;
    std::set<std::string> removed;
    Status st = ParseChangelogSegment("seg", EncodeChangelogSegment(*delta), [&](const ChangelogEntry& e) {
      if (e.deleted) {
        removed.insert(std::string(e.key));
      } else {
        read[std::string(e.key)] = e.int64;
      }
      return Status::OK();
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (delta == d.get()) {
      EXPECT_EQ(read.size(), 41u);
      EXPECT_TRUE(removed.empty());
    } else {
      EXPECT_EQ(read, want);
      EXPECT_EQ(removed, std::set<std::string>{std::string()});
    }
  }
}

// Encoding into a kept buffer (as a persister thread does, checkpoint after checkpoint) gives
// the bytes of a fresh encoding, also when the buffer is larger than the segment: a large
// delta, then a small one, then a larger one again.
TEST(ChangelogTest, EncodingIntoAKeptBufferGivesTheBytesOfAFreshEncoding) {
  KeyedInt64State table(kMaxP, KeyGroupRange{0, kMaxP - 1});
  std::string buffer;
  for (int round : {3000, 5, 0, 7000}) {
    for (int i = 0; i < round; ++i) table.Add("key-" + std::to_string(i * 13 + round), i + 1);
    if (round == 0) table.Delete("key-5");
    std::unique_ptr<StateDelta> d = table.TakeDelta();
    const std::string fresh = EncodeChangelogSegment(*d);
    const std::string_view kept = EncodeChangelogSegment(*d, &buffer);
    EXPECT_EQ(kept, fresh) << "round of " << round << " keys";
    EXPECT_EQ(kept.data(), buffer.data());
    EXPECT_GE(buffer.size(), kept.size());
    size_t entries = 0;
    ASSERT_TRUE(ParseChangelogSegment("seg", kept, [&](const ChangelogEntry&) {
                  ++entries;
                  return Status::OK();
                }).ok());
    EXPECT_EQ(entries, d->entries.size());
  }
}

// state.materialize_ratio: with the interval out of reach (an hour), the segments since the
// last materialization outgrowing the ratio times its size start one; a restore of a later
// checkpoint then reads the materialization and few segments. Ratio 0: the interval only.
TEST(ChangelogTest, TheSegmentsOutgrowingTheRatioTimesTheStateStartAMaterialization) {
  for (double ratio : {0.0, 1.0}) {
    SCOPED_TRACE("ratio " + std::to_string(ratio));
    ScratchDir dir;
    const std::string root = dir / "ck";
    auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
    StateBackendOptions o = Options(Mode(Kind::kHeap, true, 3600 * 1000), root);
    o.materialize_ratio = ratio;
    o.materialize_min_bytes = 0;
    Subtask s;
    ASSERT_TRUE(NewStateBackend(o)->CreateKeyed(root + "/_work/run-1/op-0", kMaxP, kAll, &s.s).ok());
    ValueState<int64_t>* def;
    ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
    // Every checkpoint changes every key: each segment is about the state's size.
    int c = 0, written = 0;
    size_t segments = 0, others = 0;
    auto round = [&] {
      written = ++c;
      for (int i = 0; i < 2000; ++i) def->Put("key" + std::to_string(i), c * 10000 + i);
      s.Checkpoint(chk(c));
      SplitRefs(chk(c), &segments, &others);
    };
    if (ratio == 0) {
      for (int i = 0; i < 20; ++i) round();
      EXPECT_EQ(others, 0u) << "materialized without the interval or the ratio";
      EXPECT_EQ(segments, 20u);
      continue;
    }
    // The first segment outgrows the empty database: a materialization follows.
    ASSERT_TRUE(PollUntil([&] {
      round();
      return others > 0;
    }));
    for (int i = 0; i < 6; ++i) round();
    // With no more changes, the materializer catches up until what a checkpoint lists of
    // segments is at most the ratio times the materialization it lists.
    uint64_t segment_bytes = 0, materialization_bytes = 0;
    ASSERT_TRUE(PollUntil([&] {
      s.Checkpoint(chk(++c));
      std::vector<SharedFileRef> refs;
      bool incremental = false;
      EXPECT_TRUE(ReadSharedList(chk(c), &refs, &incremental).ok());
      segment_bytes = materialization_bytes = 0;
      for (const auto& r : refs)
        (IsChangelogSegmentName(r.name) ? segment_bytes : materialization_bytes) += std::filesystem::file_size(r.path);
      return materialization_bytes > 0 && segment_bytes <= materialization_bytes;
    })) << "checkpoint " << c << " lists " << segment_bytes << " bytes of segments and a materialization of "
        << materialization_bytes;
    const int last = c;
    Subtask r;
    ASSERT_TRUE(NewStateBackend(o)->RestoreKeyed({{chk(last), kAll}}, root + "/_work/run-2/op-0", kMaxP, kAll, &r.s, nullptr).ok());
    ValueState<int64_t>* rdef;
    ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &rdef).ok());
    for (int i = 0; i < 2000; i += 199) {
      int64_t v = 0;
      ASSERT_TRUE(rdef->Get("key" + std::to_string(i), &v));
      EXPECT_EQ(v, written * 10000 + i);
    }
  }
}

// The id of the materialization a keyed snapshot lists (its non-table files are named
// "<token>-m<id>-<name>" in shared/: RocksDbStateStore::SharedPath), 0 when it lists none, and
// how many table files it lists.
void ListedMaterialization(const std::string& keyed_dir, uint64_t* id, size_t* tables) {
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  ASSERT_TRUE(ReadSharedList(keyed_dir, &refs, &incremental).ok());
  *id = 0;
  *tables = 0;
  for (const auto& r : refs) {
    if (r.name.ends_with(".sst")) {
      ++*tables;
      continue;
    }
    const std::string file = std::filesystem::path(r.path).filename().string();
    const size_t m = file.find("-m");
    if (!IsChangelogSegmentName(r.name) && m != std::string::npos)
      *id = std::max<uint64_t>(*id, std::strtoull(file.c_str() + m + 2, nullptr, 10));
  }
}

// Each materialization ingests one table file over the whole key range. The materializer
// merges them (CompactSortedRuns): when every key changes between materializations, each
// checkpoint after the second lists one table file, not one per materialization; when few
// keys change, at most four (kMaxSortedRuns). The state read back is the newest either way.
TEST(ChangelogTest, MaterializationsDoNotPileUpTableFiles) {
  for (int changed : {2000, 20}) {
    SCOPED_TRACE(std::to_string(changed) + " keys changed a checkpoint");
    ScratchDir dir;
    const std::string root = dir / "ck";
    auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
    StateBackendOptions o = Options(Mode(Kind::kHeap, true, 1), root);  // materialized every millisecond
    Subtask s;
    ASSERT_TRUE(NewStateBackend(o)->CreateKeyed(root + "/_work/run-1/op-0", kMaxP, kAll, &s.s).ok());
    ValueState<int64_t>* def;
    ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
    std::map<std::string, int64_t> want;
    int c = 0;
    auto put = [&](int first, int n) {
      for (int i = first; i < first + n; ++i) {
        const std::string key = "key" + std::to_string(i % 2000);
        def->Put(key, c * 10000 + i);
        want[key] = c * 10000 + i;
      }
    };
    put(0, 2000);
    uint64_t id = 0;
    size_t tables = 0, most = 0;
    // Until a checkpoint lists the eighth materialization.
    ASSERT_TRUE(PollUntil([&] {
      ++c;
      put(c * changed, changed);
      s.Checkpoint(chk(c));
      ListedMaterialization(chk(c), &id, &tables);
      if (id >= 3) most = std::max(most, tables);
      return id >= 8;
    })) << "checkpoint " << c << " lists materialization " << id;
    if (changed == 2000) {
      EXPECT_EQ(tables, 1u) << "checkpoint " << c;
      EXPECT_EQ(most, 1u);
    } else {
      EXPECT_LE(most, 4u);
    }
    Subtask r;
    ASSERT_TRUE(NewStateBackend(o)->RestoreKeyed({{chk(c), kAll}}, root + "/_work/run-2/op-0", kMaxP, kAll, &r.s, nullptr).ok());
    ValueState<int64_t>* rdef;
    ASSERT_TRUE(r.keyed()->GetValueState(kDefaultStateName, &rdef).ok());
    for (const auto& [key, value] : want) {
      int64_t v = 0;
      ASSERT_TRUE(rdef->Get(key, &v)) << key;
      EXPECT_EQ(v, value) << key;
    }
  }
}

// RocksDB-delta checkpoints ingest each delta as a table file over the whole key range: RocksDB
// merges them into its last level (level_compaction_dynamic_level_bytes), so once its
// compactions are done a checkpoint lists the last level's file and level 0's few (fewer than
// its compaction trigger, 4), not one file per level as with static level sizes (where the
// first six deltas stayed for good).
TEST(RocksDbDeltaTest, IngestedDeltasAreMergedIntoTheLastLevel) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
  const Mode mode(Kind::kHeap, false);
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(mode, root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<int64_t>* def;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
  int c = 0;
  for (; c < 10;) {
    ++c;
    for (int i = 0; i < 2000; ++i) def->Put("key" + std::to_string(i), c * 10000 + i);
    s.Checkpoint(chk(c));
  }
  uint64_t id = 0;
  size_t tables = 0;
  ASSERT_TRUE(PollUntil([&] {
    s.Checkpoint(chk(++c));  // nothing changed: the database's files as they are now
    ListedMaterialization(chk(c), &id, &tables);
    return tables > 0 && tables <= 4;
  })) << "checkpoint " << c << " lists " << tables << " table files";
  auto all = ReadAll(chk(c));
  ASSERT_EQ(all.size(), 2000u);
  EXPECT_EQ(all.at("value/int64/|key7|"), std::string(ReadAll(chk(10)).at("value/int64/|key7|")));
}

// The pre-flight (VerifySnapshot) passes every sound checkpoint, with and without a
// materialization and of either path, changes nothing, and names a listed file that is missing.
TEST(ChangelogTest, VerifySnapshotPassesSoundCheckpointsAndNamesAMissingFile) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  auto chk = [&](int id) { return root + "/chk-" + std::to_string(id) + "/op-0/keyed"; };
  auto backend = NewStateBackend(StateBackendOptions{});
  for (bool changelog : {true, false}) {
    SCOPED_TRACE(changelog ? "changelog" : "rocksdb delta");
    ASSERT_TRUE(RemoveAll(root).ok());
    StateBackendOptions o = Options(Mode(Kind::kHeap, changelog, 3600 * 1000), root);
    o.materialize_ratio = 1.0;
    o.materialize_min_bytes = 0;  // the first segment outgrows the empty database
    Subtask s;
    ASSERT_TRUE(NewStateBackend(o)->CreateKeyed(root + "/_work/run-1/op-0", kMaxP, kAll, &s.s).ok());
    ValueState<int64_t>* def;
    MapState<std::string, int64_t>* m;
    ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
    ASSERT_TRUE(s.keyed()->GetMapState("m", &m).ok());
    for (int i = 0; i < 3000; ++i) {
      def->Put("k" + std::to_string(i), i);
      m->Put("k" + std::to_string(i), "u", -i);
    }
    s.Checkpoint(chk(1));
    def->Clear("k5");
    s.Checkpoint(chk(2));
    int c = 2;
    size_t segments = 0, others = 0;
    if (changelog) {
      SplitRefs(chk(1), &segments, &others);
      EXPECT_EQ(others, 0u) << "checkpoint 1 is its segment only";
      ASSERT_TRUE(PollUntil([&] {  // then one that lists a materialization and segments
        def->Put("k6", ++c);
        s.Checkpoint(chk(c));
        SplitRefs(chk(c), &segments, &others);
        return others > 0 && segments > 0;
      }));
    }
    // The subtask's materializer stopped: nothing else writes below root now.
    s.s.keyed.reset();
    s.s.store.reset();
    s.s.int64.reset();
    for (int id = 1; id <= c; ++id) {
      const Tree before = TreeSnapshot(root);
      Status st = backend->VerifySnapshot(chk(id));
      EXPECT_TRUE(st.ok()) << id << ": " << st.ToString();
      EXPECT_TRUE(SameTree(before, TreeSnapshot(root))) << "verifying changed something";
    }
    std::vector<SharedFileRef> refs;
    bool incremental = false;
    ASSERT_TRUE(ReadSharedList(chk(c), &refs, &incremental).ok());
    ASSERT_FALSE(refs.empty());
    ASSERT_TRUE(RemoveAll(refs.back().path).ok());
    Status st = backend->VerifySnapshot(chk(c));
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    EXPECT_THAT(st.message(), ::testing::HasSubstr(refs.back().path));
    EXPECT_TRUE(backend->VerifySnapshot(root + "/chk-99/op-0/keyed").IsNotFound());
  }
}

TEST(ChangelogTest, ADamagedSegmentIsCorruptionNamingItAndTheRestoreLeavesNothing) {
  ScratchDir dir;
  const std::string root = dir / "ck";
  const std::string keyed = root + "/chk-1/op-0/keyed";
  Subtask s;
  ASSERT_NO_FATAL_FAILURE(Create(Mode(Kind::kHeap, true, 3600 * 1000), root, root + "/_work/run-1/op-0", kAll, &s));
  ValueState<int64_t>* def;
  ASSERT_TRUE(s.keyed()->GetValueState(kDefaultStateName, &def).ok());
  def->Put("a", 1);
  s.Checkpoint(keyed);
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  ASSERT_TRUE(ReadSharedList(keyed, &refs, &incremental).ok());
  ASSERT_EQ(refs.size(), 1u);
  std::string bytes = ReadText(refs[0].path);
  bytes[bytes.size() / 2] ^= 0x55;
  ASSERT_TRUE(RemoveAll(refs[0].path).ok());  // a new inode: the local copy stays intact
  WriteText(refs[0].path, bytes);
  Status st = NewStateBackend(StateBackendOptions{})->ReadStates(keyed, [](const StateEntry&) {});
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_THAT(st.message(), ::testing::HasSubstr(refs[0].path));
  // The pre-flight finds it by the segment's checksum.
  st = NewStateBackend(StateBackendOptions{})->VerifySnapshot(keyed);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_THAT(st.message(), ::testing::HasSubstr(refs[0].path));
  KeyedSubtaskState out;
  const std::string work = root + "/_work/run-2/op-0";
  st = NewStateBackend(Options(Mode(Kind::kHeap, true), root))->RestoreKeyed({{keyed, kAll}}, work, kMaxP, kAll, &out, nullptr);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_FALSE(PathExists(work));
}

}  // namespace
}  // namespace cairn::testing

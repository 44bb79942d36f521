// Specification of RocksDbStateStore: deltas become RocksDB checkpoints, restores rebuild the
// state (by hard links when the key groups are unchanged, by rewriting when rescaling), and
// snapshot directories are never modified.
#include "state/rocksdb_state_store.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;
using testing::PollUntil;
using testing::ReadText;
using testing::ScratchDir;

constexpr uint32_t kMaxParallelism = 128;
const KeyGroupRange kAllGroups{0, kMaxParallelism - 1};

using Entries = std::map<std::string, int64_t>;

uint32_t GroupOf(std::string_view key) { return KeyGroupOf(KeyHash(key), kMaxParallelism); }

Entries StateEntries(const KeyedInt64State& s) {
  Entries m;
  s.ForEach([&](std::string_view k, int64_t v) { m[std::string(k)] = v; });
  return m;
}

Entries SnapshotEntries(const std::string& dir) {
  Entries m;
  Status st = RocksDbStateStore::ReadSnapshot(dir, [&](uint32_t kg, std::string_view k, int64_t v) {
    EXPECT_EQ(kg, GroupOf(k)) << k;
    m[std::string(k)] = v;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return m;
}

// Applies `changes` to `state`, takes its delta and persists it as a checkpoint at `dir`.
void Checkpoint(KeyedInt64State* state, RocksDbStateStore* store, const Entries& changes, const std::string& dir) {
  for (const auto& [k, v] : changes) state->Put(k, v);
  uint64_t bytes = 0;
  Status st = store->PersistAndCheckpoint(*state->TakeDelta(), dir, &bytes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_GT(bytes, 0u);
}

// Everything observable about a directory's files except link counts: names, sizes,
// modification times and contents.
struct FileFingerprint {
  uint64_t size;
  int64_t mtime_sec;
  int64_t mtime_nsec;
  std::string contents;
  bool operator==(const FileFingerprint& o) const {
    return size == o.size && mtime_sec == o.mtime_sec && mtime_nsec == o.mtime_nsec && contents == o.contents;
  }
};

std::map<std::string, FileFingerprint> Fingerprint(const std::string& dir) {
  std::map<std::string, FileFingerprint> m;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st;
    EXPECT_EQ(::stat(e.path().c_str(), &st), 0);
    std::string rel = fs::relative(e.path(), dir).string();
    if (e.is_directory()) {
      m[rel + "/"] = FileFingerprint{0, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, ""};
    } else {
      m[rel] = FileFingerprint{static_cast<uint64_t>(st.st_size), st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                               ReadText(e.path().string())};
    }
  }
  struct stat st;
  EXPECT_EQ(::stat(dir.c_str(), &st), 0);
  m["."] = FileFingerprint{0, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, ""};
  return m;
}

ino_t Inode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

std::vector<std::string> SstFiles(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".sst") v.push_back(e.path().filename().string());
  }
  return v;
}

std::unique_ptr<RocksDbStateStore> CreateStore(const std::string& dir) {
  std::unique_ptr<RocksDbStateStore> store;
  Status st = RocksDbStateStore::Create(dir, &store);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return store;
}

std::unique_ptr<RocksDbStateStore> RestoreStore(const std::vector<KeyedSnapshotHandle>& snapshots,
                                                const std::string& work_dir, KeyedInt64State* state) {
  std::unique_ptr<RocksDbStateStore> store;
  Status st = RocksDbStateStore::Restore(snapshots, work_dir, state, &store);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return store;
}

// Two checkpoints of one subtask: the second changes "b", adds "d", leaves "a" and "c".
struct TwoCheckpoints {
  ScratchDir scratch;
  std::string chk1 = scratch / "chk-1/op-0/keyed";
  std::string chk2 = scratch / "chk-2/op-0/keyed";
  Entries first{{"a", 1}, {"b", 2}, {"c", 3}};
  Entries second{{"b", 20}, {"d", -4}};
  Entries union_latest{{"a", 1}, {"b", 20}, {"c", 3}, {"d", -4}};

  TwoCheckpoints() {
    KeyedInt64State state(kMaxParallelism, kAllGroups);
    auto store = CreateStore(scratch / "_work/run/op-0");
    Checkpoint(&state, store.get(), first, chk1);
    Checkpoint(&state, store.get(), second, chk2);
  }
};

TEST(RocksDbStateStoreTest, CheckpointIsAReadableSnapshotOfTheDelta) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  const Entries entries{{"x", std::numeric_limits<int64_t>::max()},
                        {"y", std::numeric_limits<int64_t>::min()},
                        {"z", -1},
                        {std::string("nul\0key", 7), 7},
                        {"\xc3\xa9t\xc3\xa9", 8},
                        {"", 9}};
  Checkpoint(&state, store.get(), entries, scratch / "chk");
  EXPECT_EQ(SnapshotEntries(scratch / "chk"), entries);
}

TEST(RocksDbStateStoreTest, CheckpointOfEmptyDeltaIsAnEmptyOpenableSnapshot) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  Checkpoint(&state, store.get(), {}, scratch / "chk");
  EXPECT_TRUE(SnapshotEntries(scratch / "chk").empty());
}

TEST(RocksDbStateStoreTest, KeyDeletedAfterACheckpointIsGoneFromTheNextAndItsRestore) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  Checkpoint(&state, store.get(), {{"a", 1}, {"b", 2}, {"c", 3}}, scratch / "chk-1");
  state.Delete("b");
  Checkpoint(&state, store.get(), {{"d", 4}}, scratch / "chk-2");
  EXPECT_EQ(SnapshotEntries(scratch / "chk-1"), (Entries{{"a", 1}, {"b", 2}, {"c", 3}}));
  EXPECT_EQ(SnapshotEntries(scratch / "chk-2"), (Entries{{"a", 1}, {"c", 3}, {"d", 4}}));
  KeyedInt64State restored(kMaxParallelism, kAllGroups);
  auto again = RestoreStore({{scratch / "chk-2", kAllGroups}}, scratch / "restored", &restored);
  EXPECT_EQ(StateEntries(restored), (Entries{{"a", 1}, {"c", 3}, {"d", 4}}));
}

// A delta listing a key twice (TakeDelta and Merge never make one, but the store does not rely
// on it): the later entry wins, whether it sets or deletes the key.
TEST(RocksDbStateStoreTest, LaterEntryForAKeyListedTwiceInOneDeltaWins) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  Checkpoint(&state, store.get(), {{"gone", 5}}, scratch / "chk-1");
  StateDelta delta;
  auto add = [&](std::string_view key, int64_t value, bool deleted) {
    delta.entries.push_back(StateDelta::Entry{GroupOf(key), deleted, static_cast<uint32_t>(key.size()),
                                              delta.keys.size(), value});
    delta.keys.append(key);
  };
  add("x", 1, false);
  add("gone", 6, false);
  add("y", 2, false);
  add("x", 3, false);
  add("gone", 0, true);
  add("y", 0, true);
  add("y", 4, false);
  uint64_t bytes = 0;
  Status st = store->PersistAndCheckpoint(delta, scratch / "chk-2", &bytes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(SnapshotEntries(scratch / "chk-2"), (Entries{{"x", 3}, {"y", 4}}));
}

// The delta is sorted into RocksDB's key order on copies of each key's first 14 bytes: keys
// that differ only past them, or only in trailing zero bytes, or that are prefixes of one
// another, still come out in order (the table file's writer refuses any other), each key once,
// its last entry winning.
TEST(RocksDbStateStoreTest, KeysAlikeInTheirFirstFourteenBytesAreWrittenInKeyOrder) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  using namespace std::string_literals;
  std::vector<std::string> keys = {""s, "\0"s, "\0\0"s, "a"s, "a\0"s, "a\0\0"s,
                                   "abcdefghijklm"s, "abcdefghijklmn"s,  // 13 and 14 bytes
                                   "abcdefghijklmno"s, "abcdefghijklmnop"s, "abcdefghijklmnoq"s,
                                   "abcdefghijklmn\0"s, "abcdefghijklmn\0\0"s, "abcdefghijklm\0"s,
                                   "abcdefghijklmn\xff"s, "\xff\xff"s};
  // Many more (enough that the sort first splits them by key group in place): short and long
  // keys over a small alphabet with 0 and 255, so that equal 14-byte beginnings are common.
  std::mt19937 rng(7);
  const char alphabet[] = {'\0', 'a', 'b', '\xff'};
  for (int i = 0; i < 70000; ++i) {
    std::string k(rng() % 20, 'a');
    for (char& c : k) c = alphabet[rng() % 4];
    keys.push_back(k);
  }
  StateDelta delta;
  Entries expected;
  int64_t value = 0;
  for (const std::string& k : keys) {  // each key listed once or twice, the later entry winning
    for (int times = 0; times < 1 + static_cast<int>(k.size() % 2); ++times) {
      ++value;
      delta.entries.push_back(StateDelta::Entry{GroupOf(k), false, static_cast<uint32_t>(k.size()), delta.keys.size(), value});
      delta.keys.append(k);
      expected[k] = value;
    }
  }
  uint64_t bytes = 0;
  Status st = store->PersistAndCheckpoint(delta, scratch / "chk", &bytes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(SnapshotEntries(scratch / "chk"), expected);
}

TEST(RocksDbStateStoreTest, CreateRefusesAnExistingDirectory) {
  ScratchDir scratch;
  std::unique_ptr<RocksDbStateStore> store;
  Status st = RocksDbStateStore::Create(scratch.path(), &store);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find(scratch.path()), std::string::npos) << st.ToString();
}

TEST(RocksDbStateStoreTest, CheckpointIntoAnExistingDirectoryFailsNamingIt) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  fs::create_directories(scratch / "chk");
  uint64_t bytes = 0;
  Status st = store->PersistAndCheckpoint(*state.TakeDelta(), scratch / "chk", &bytes);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(scratch / "chk"), std::string::npos) << st.ToString();
}

TEST(RocksDbStateStoreTest, SecondCheckpointHoldsUnionWithLatestValues) {
  TwoCheckpoints t;
  EXPECT_EQ(SnapshotEntries(t.chk2), t.union_latest);
}

TEST(RocksDbStateStoreTest, RestoreFromSecondCheckpointGivesUnionWithLatestValues) {
  TwoCheckpoints t;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = RestoreStore({{t.chk2, kAllGroups}}, t.scratch / "restored", &state);
  EXPECT_EQ(StateEntries(state), t.union_latest);
  EXPECT_TRUE(state.TakeDelta()->entries.empty());
}

TEST(RocksDbStateStoreTest, FirstCheckpointStaysRestorableAndSharesFilesWithSecond) {
  TwoCheckpoints t;
  EXPECT_EQ(SnapshotEntries(t.chk1), t.first);
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = RestoreStore({{t.chk1, kAllGroups}}, t.scratch / "restored", &state);
  EXPECT_EQ(StateEntries(state), t.first);

  // The SST written for the first checkpoint is the same file (inode) in the second.
  std::vector<std::string> shared;
  for (const std::string& name : SstFiles(t.chk1)) {
    if (fs::exists(t.chk2 + "/" + name) && Inode(t.chk1 + "/" + name) == Inode(t.chk2 + "/" + name)) {
      shared.push_back(name);
    }
  }
  EXPECT_FALSE(shared.empty());
}

TEST(RocksDbStateStoreTest, FirstCheckpointIsUnchangedByTheSecond) {
  ScratchDir scratch;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  Checkpoint(&state, store.get(), {{"a", 1}, {"b", 2}}, scratch / "chk-1");
  auto before = Fingerprint(scratch / "chk-1");
  Checkpoint(&state, store.get(), {{"b", 3}, {"c", 4}}, scratch / "chk-2");
  EXPECT_EQ(Fingerprint(scratch / "chk-1"), before);
}

TEST(RocksDbStateStoreTest, RestoreFastPathRebuildsTheDatabaseFromHardLinks) {
  TwoCheckpoints t;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  const std::string work = t.scratch / "restored";
  auto store = RestoreStore({{t.chk2, kAllGroups}}, work, &state);
  ASSERT_NE(store, nullptr);
  const auto snapshot_ssts = SstFiles(t.chk2);
  ASSERT_FALSE(snapshot_ssts.empty());
  for (const std::string& name : snapshot_ssts) {
    ASSERT_TRUE(fs::exists(work + "/" + name)) << name;
    EXPECT_EQ(Inode(work + "/" + name), Inode(t.chk2 + "/" + name)) << name;
  }
  EXPECT_EQ(StateEntries(state), t.union_latest);
}

TEST(RocksDbStateStoreTest, CheckpointAfterFastPathRestoreHoldsRestoredAndNewEntries) {
  TwoCheckpoints t;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = RestoreStore({{t.chk2, kAllGroups}}, t.scratch / "restored", &state);
  ASSERT_NE(store, nullptr);
  state.Add("a", 100);
  state.Add("e", 5);
  uint64_t bytes = 0;
  Status st = store->PersistAndCheckpoint(*state.TakeDelta(), t.scratch / "chk-3/op-0/keyed", &bytes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  Entries want = t.union_latest;
  want["a"] = 101;
  want["e"] = 5;
  EXPECT_EQ(SnapshotEntries(t.scratch / "chk-3/op-0/keyed"), want);
  EXPECT_EQ(SnapshotEntries(t.chk2), t.union_latest);
}

// "<prefix><i>" (appended, not `"literal" + std::string`, which GCC 12 warns about wrongly).
std::string NumberedKey(const char* prefix, int i) {
  std::string k(prefix);
  k += std::to_string(i);
  return k;
}

// The key ranges [smallest, largest] of the table files of the database `dir` (opened read-only),
// sorted.
std::vector<std::pair<std::string, std::string>> FileKeyRanges(const std::string& dir) {
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<std::pair<std::string, std::string>> ranges;
  if (db == nullptr) return ranges;
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(&meta);
  for (const auto& level : meta.levels)
    for (const auto& f : level.files) ranges.emplace_back(f.smallestkey, f.largestkey);
  delete db;
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

// A snapshot whose files hold disjoint key ranges is restored by reading each file on its own
// (state/rocksdb_state_store.cc, LoadDefaultFamily): every entry comes back, and a key a file
// holds only as a deletion (set and removed within one delta) stays absent. The overlapping
// files of the tests above take the database iterator.
TEST(RocksDbStateStoreTest, RestoreOfSnapshotWithDisjointFilesGivesEveryEntry) {
  ScratchDir scratch;
  Entries low, high;  // keys of key groups below 64, and of 64 and above
  for (int i = 0; low.size() < 300 || high.size() < 300; ++i) {
    std::string key = NumberedKey("k", i);
    (GroupOf(key) < 64 ? low : high)[key] = i + 1;
  }
  std::string gone;  // a key of the high groups that none of `high` is
  for (int i = 0; gone.empty(); ++i)
    if (std::string key = NumberedKey("gone", i); GroupOf(key) >= 64) gone = key;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = CreateStore(scratch / "work");
  Checkpoint(&state, store.get(), low, scratch / "chk-1");
  state.Put(gone, 7);
  state.Delete(gone);
  Checkpoint(&state, store.get(), high, scratch / "chk-2");

  // The premise: two files, one per checkpoint, whose key ranges do not overlap.
  const auto ranges = FileKeyRanges(scratch / "chk-2");
  ASSERT_EQ(ranges.size(), 2u);
  ASSERT_LT(ranges[0].second, ranges[1].first);

  Entries all = low;
  all.insert(high.begin(), high.end());
  KeyedInt64State restored(kMaxParallelism, kAllGroups);
  auto again = RestoreStore({{scratch / "chk-2", kAllGroups}}, scratch / "restored", &restored);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(StateEntries(restored), all);
  int64_t v = 0;
  EXPECT_FALSE(restored.Get(gone, &v));
  EXPECT_TRUE(restored.TakeDelta()->entries.empty());
  EXPECT_EQ(SnapshotEntries(scratch / "chk-2"), all);
}

// A stored entry of the default state: the key group (2 bytes, big-endian), then the key; the
// value as 8 bytes, little-endian.
std::pair<std::string, std::string> StoredEntry(const std::string& key, int64_t value) {
  const uint32_t kg = GroupOf(key);
  std::string k{static_cast<char>(kg >> 8), static_cast<char>(kg & 0xff)};
  k += key;
  std::string v(8, '\0');
  for (int i = 0; i < 8; ++i) v[i] = static_cast<char>(static_cast<uint64_t>(value) >> (8 * i));
  return {k, v};
}

// A fresh database at `dir` that compacts only when asked (its files stay where the test puts
// them); null when it cannot be opened.
std::unique_ptr<rocksdb::DB> OpenUncompactedDatabase(const std::string& dir) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.disable_auto_compactions = true;
  rocksdb::DB* raw = nullptr;
  EXPECT_TRUE(rocksdb::DB::Open(o, dir, &raw).ok());
  return std::unique_ptr<rocksdb::DB>(raw);
}

// A database of the default state whose files lie in two levels and overlap: every key written,
// flushed and compacted into a level below L0, then a third of the keys written again and a
// fifth once more, each flushed into a file of L0 (newer than the level below, the second
// newer than the first), and, with `delete_in_newest`, one key deleted in the newest file.
// Returns the entries it holds.
Entries WriteLayeredDatabase(const std::string& dir, bool delete_in_newest) {
  std::unique_ptr<rocksdb::DB> db = OpenUncompactedDatabase(dir);
  if (db == nullptr) return {};
  Entries want;
  auto put = [&](const std::string& key, int64_t value) {
    auto [k, v] = StoredEntry(key, value);
    EXPECT_TRUE(db->Put(rocksdb::WriteOptions(), k, v).ok());
    want[key] = value;
  };
  for (int i = 0; i < 300; ++i) put(NumberedKey("k", i), i + 1);
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  EXPECT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok());
  for (int i = 0; i < 300; i += 3) put(NumberedKey("k", i), 1000 + i);
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  for (int i = 0; i < 300; i += 5) put(NumberedKey("k", i), 2000 + i);
  if (delete_in_newest) {
    EXPECT_TRUE(db->Delete(rocksdb::WriteOptions(), StoredEntry("k7", 0).first).ok());
    want.erase("k7");
  }
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(&meta);
  size_t below = 0;
  for (const auto& level : meta.levels) {
    if (level.level == 0) {
      EXPECT_EQ(level.files.size(), 2u);
    } else {
      below += level.files.size();
    }
  }
  EXPECT_GT(below, 0u);
  return want;
}

// Writes WriteLayeredDatabase's database, restores it into `state` and checks that it holds
// exactly the expected entries, which it returns.
Entries RestoreLayered(bool delete_in_newest, KeyedInt64State* state) {
  ScratchDir scratch;
  const Entries want = WriteLayeredDatabase(scratch / "layered", delete_in_newest);
  auto store = RestoreStore({{scratch / "layered", kAllGroups}}, scratch / "restored", state);
  EXPECT_NE(store, nullptr);
  EXPECT_EQ(StateEntries(*state), want);
  return want;
}

// Files that overlap, in two levels, are merged by key (state/rocksdb_state_store.cc,
// LoadMergedFiles): the newest version of every key comes back.
TEST(RocksDbStateStoreTest, RestoreOfLayeredFilesGivesTheNewestVersionOfEveryKey) {
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  const Entries want = RestoreLayered(/*delete_in_newest=*/false, &state);
  EXPECT_EQ(want.at("k15"), 2015);
  EXPECT_EQ(want.at("k3"), 1003);
  EXPECT_EQ(want.at("k1"), 2);
}

// The same with a deletion in the newest file, which the restore reads through the database:
// the key stays out (read on its own, that file would hide its deletion and an older file's
// entry would come back).
TEST(RocksDbStateStoreTest, RestoreOfLayeredFilesWithADeletionLeavesTheKeyOut) {
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  const Entries want = RestoreLayered(/*delete_in_newest=*/true, &state);
  EXPECT_EQ(want.count("k7"), 0u);
  int64_t v = 0;
  EXPECT_FALSE(state.Get("k7", &v));
}

// `files` flushes into level 0 of a database at `dir`, the f-th (from 1) rewriting every key
// of k0..k199 (`prefix` for k) whose number f divides. Returns the entries it holds: the newest
// version of every key, e.g. k60's from the tenth file when there are ten.
Entries WriteOverlappingFlushes(const std::string& dir, int files, const char* prefix = "k") {
  std::unique_ptr<rocksdb::DB> db = OpenUncompactedDatabase(dir);
  if (db == nullptr) return {};
  Entries want;
  for (int f = 1; f <= files; ++f) {
    for (int i = 0; i < 200; i += f) {
      auto [k, v] = StoredEntry(NumberedKey(prefix, i), 100 * f + i);
      EXPECT_TRUE(db->Put(rocksdb::WriteOptions(), k, v).ok());
      want[NumberedKey(prefix, i)] = 100 * f + i;
    }
    EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  }
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(&meta);
  EXPECT_EQ(meta.levels[0].files.size(), static_cast<size_t>(files));
  return want;
}

// Restores WriteOverlappingFlushes' database of `files` files: the newest version of every key
// comes back.
void RestoreOfOverlappingFlushes(int files, const char* prefix = "k") {
  ScratchDir scratch;
  const Entries want = WriteOverlappingFlushes(scratch / "many", files, prefix);
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = RestoreStore({{scratch / "many", kAllGroups}}, scratch / "restored", &state);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(StateEntries(state), want);
  EXPECT_EQ(want.at(NumberedKey(prefix, 7)), 707);
  EXPECT_EQ(want.at(NumberedKey(prefix, 60)), files >= 60 ? 6060 : 1060);
}

// Ten overlapping files, merged by the restore itself (LoadMergedFiles' heap: of the files
// that hold a key, the newest wins); with short keys, and with keys that begin with the same
// 32 bytes (stored after their key group's 2).
TEST(RocksDbStateStoreTest, RestoreOfTenOverlappingFilesGivesTheNewestVersionOfEveryKey) {
  RestoreOfOverlappingFlushes(10);
  RestoreOfOverlappingFlushes(10, "a key with a long shared prefix ");
}

// More overlapping files than the restore merges itself (kMaxMergedFiles, 64): read through
// the database, the same.
TEST(RocksDbStateStoreTest, RestoreOfSixtyFiveOverlappingFilesGivesTheNewestVersionOfEveryKey) {
  RestoreOfOverlappingFlushes(65);
}

// A restore loads the state before the restored database compacts (its compactions are off
// while it loads), and turns compactions on after: the ten files of level 0 are merged later,
// and a checkpoint then lists fewer table files.
TEST(RocksDbStateStoreTest, RestoredDatabaseCompactsOnceTheStateIsLoaded) {
  ScratchDir scratch;
  const Entries want = WriteOverlappingFlushes(scratch / "many", 10);
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = RestoreStore({{scratch / "many", kAllGroups}}, scratch / "restored", &state);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(StateEntries(state), want);
  int c = 0;
  size_t tables = 0;
  ASSERT_TRUE(PollUntil([&] {
    const std::string dir = scratch / ("chk-" + std::to_string(++c));
    uint64_t bytes = 0;
    Status st = store->PersistAndCheckpoint(*state.TakeDelta(), dir, &bytes);  // nothing changed
    EXPECT_TRUE(st.ok()) << st.ToString();
    tables = SstFiles(dir).size();
    return tables > 0 && tables < 4;
  })) << "checkpoint " << c << " lists " << tables << " table files";
  EXPECT_EQ(SnapshotEntries(scratch / ("chk-" + std::to_string(c))), want);
}

// Word-count-like state written by 2 subtasks, each holding the keys of its own key groups.
struct TwoSubtaskCheckpoint {
  ScratchDir scratch;
  Entries all;
  std::vector<KeyedSnapshotHandle> handles;

  TwoSubtaskCheckpoint() {
    constexpr uint32_t kOld = 2;
    std::vector<std::unique_ptr<KeyedInt64State>> states;
    std::vector<std::unique_ptr<RocksDbStateStore>> stores;
    for (uint32_t i = 0; i < kOld; ++i) {
      states.push_back(std::make_unique<KeyedInt64State>(kMaxParallelism,
                                                         KeyGroupRange::ForSubtask(i, kMaxParallelism, kOld)));
      stores.push_back(CreateStore(scratch / ("work-" + std::to_string(i))));
    }
    for (int n = 0; n < 5000; ++n) {
      std::string key = "word-" + std::to_string(n);
      uint32_t subtask = SubtaskForKeyGroup(GroupOf(key), kMaxParallelism, kOld);
      EXPECT_TRUE(states[subtask]->range().Contains(GroupOf(key)));
      states[subtask]->Add(key, n + 1);
      all[key] = n + 1;
    }
    for (uint32_t i = 0; i < kOld; ++i) {
      std::string dir = scratch / ("chk-1/op-" + std::to_string(i) + "/keyed");
      uint64_t bytes = 0;
      Status st = stores[i]->PersistAndCheckpoint(*states[i]->TakeDelta(), dir, &bytes);
      EXPECT_TRUE(st.ok()) << st.ToString();
      handles.push_back({dir, states[i]->range()});
    }
  }

  Entries InRange(const KeyGroupRange& r) const {
    Entries m;
    for (const auto& [k, v] : all) {
      if (r.Contains(GroupOf(k))) m[k] = v;
    }
    return m;
  }
};

TEST(RocksDbStateStoreTest, RescaleRestoreGivesEachSubtaskExactlyItsKeyGroups) {
  TwoSubtaskCheckpoint c;
  constexpr uint32_t kNew = 3;
  size_t total = 0;
  for (uint32_t i = 0; i < kNew; ++i) {
    const KeyGroupRange range = KeyGroupRange::ForSubtask(i, kMaxParallelism, kNew);
    KeyedInt64State state(kMaxParallelism, range);
    auto store = RestoreStore(c.handles, c.scratch / ("restored-" + std::to_string(i)), &state);
    ASSERT_NE(store, nullptr);
    Entries want = c.InRange(range);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(StateEntries(state), want) << "subtask " << i << " range " << range.ToString();
    EXPECT_TRUE(state.TakeDelta()->entries.empty());
    total += state.size();
  }
  EXPECT_EQ(total, c.all.size());
}

TEST(RocksDbStateStoreTest, CheckpointAfterRescaleRestoreContainsTheRestoredEntries) {
  TwoSubtaskCheckpoint c;
  constexpr uint32_t kNew = 3;
  for (uint32_t i = 0; i < kNew; ++i) {
    const KeyGroupRange range = KeyGroupRange::ForSubtask(i, kMaxParallelism, kNew);
    KeyedInt64State state(kMaxParallelism, range);
    auto store = RestoreStore(c.handles, c.scratch / ("restored-" + std::to_string(i)), &state);
    ASSERT_NE(store, nullptr);
    const std::string dir = c.scratch / ("chk-2/op-" + std::to_string(i) + "/keyed");
    uint64_t bytes = 0;
    Status st = store->PersistAndCheckpoint(*state.TakeDelta(), dir, &bytes);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(SnapshotEntries(dir), c.InRange(range)) << "subtask " << i;
  }
}

TEST(RocksDbStateStoreTest, RescaleRestoreToOneSubtaskMergesAllSnapshots) {
  TwoSubtaskCheckpoint c;
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  auto store = RestoreStore(c.handles, c.scratch / "restored", &state);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(StateEntries(state), c.all);
}

TEST(RocksDbStateStoreTest, RestoreOfMissingDirIsNotFoundNamingIt) {
  ScratchDir scratch;
  const std::string missing = scratch / "chk-9/op-0/keyed";
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  std::unique_ptr<RocksDbStateStore> store;
  Status st = RocksDbStateStore::Restore({{missing, kAllGroups}}, scratch / "restored", &state, &store);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.ToString();
  EXPECT_EQ(store, nullptr);
  EXPECT_FALSE(fs::exists(missing));
}

TEST(RocksDbStateStoreTest, ReadSnapshotOfMissingDirIsNotFoundNamingIt) {
  ScratchDir scratch;
  const std::string missing = scratch / "nothing-here";
  Status st = RocksDbStateStore::ReadSnapshot(missing, [](uint32_t, std::string_view, int64_t) {});
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs::exists(missing));
}

TEST(RocksDbStateStoreTest, SnapshotDirsAreUnchangedByRestoreAndReadSnapshot) {
  TwoSubtaskCheckpoint c;
  std::vector<std::map<std::string, FileFingerprint>> before;
  for (const auto& h : c.handles) before.push_back(Fingerprint(h.dir));

  for (const auto& h : c.handles) {  // fast path
    KeyedInt64State state(kMaxParallelism, h.key_groups);
    auto store = RestoreStore({h}, h.dir + "-restored", &state);
    ASSERT_NE(store, nullptr);
    state.Add("new-key", 1);  // and write to the restored database, which shares SST files
    uint64_t bytes = 0;
    ASSERT_TRUE(store->PersistAndCheckpoint(*state.TakeDelta(), h.dir + "-next", &bytes).ok());
  }
  for (uint32_t i = 0; i < 3; ++i) {  // rescale path
    KeyedInt64State state(kMaxParallelism, KeyGroupRange::ForSubtask(i, kMaxParallelism, 3));
    auto store = RestoreStore(c.handles, c.scratch / ("rescaled-" + std::to_string(i)), &state);
    ASSERT_NE(store, nullptr);
  }
  for (const auto& h : c.handles) SnapshotEntries(h.dir);

  for (size_t i = 0; i < c.handles.size(); ++i) {
    EXPECT_EQ(Fingerprint(c.handles[i].dir), before[i]) << c.handles[i].dir;
  }
}

TEST(RocksDbStateStoreTest, DamagedSnapshotIsCorruptionNamingIt) {
  TwoCheckpoints t;
  const std::string damaged = t.scratch / "damaged";
  fs::copy(t.chk2, damaged);
  testing::WriteText(damaged + "/CURRENT", "garbage without newline");
  Status st = RocksDbStateStore::ReadSnapshot(damaged, [](uint32_t, std::string_view, int64_t) {});
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find(damaged), std::string::npos) << st.ToString();
}

TEST(RocksDbStateStoreTest, EntryWithMalformedValueIsCorruptionNamingTheSnapshot) {
  ScratchDir scratch;
  const std::string dir = scratch / "foreign";
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), std::string("\0\1key", 5), "short").ok());
  }
  KeyedInt64State state(kMaxParallelism, kAllGroups);
  std::unique_ptr<RocksDbStateStore> store;
  Status st = RocksDbStateStore::Restore({{dir, kAllGroups}}, scratch / "restored", &state, &store);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find(dir), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs::exists(scratch / "restored"));
  st = RocksDbStateStore::ReadSnapshot(dir, [](uint32_t, std::string_view, int64_t) {});
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
}

}  // namespace
}  // namespace cairn

// Specification of KeyedInt64State: map semantics, growth, and the change set behind deltas.
#include "state/keyed_state.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace cairn {
namespace {

constexpr uint32_t kMaxParallelism = 128;

KeyedInt64State MakeState() { return KeyedInt64State(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1}); }

// The delta as a map key -> (key group, value); fails the test on a duplicate key.
std::map<std::string, std::pair<uint32_t, int64_t>> DeltaMap(const StateDelta& d) {
  std::map<std::string, std::pair<uint32_t, int64_t>> m;
  for (const auto& e : d.entries) {
    bool fresh = m.emplace(std::string(d.key(e)), std::make_pair(e.key_group, e.value)).second;
    EXPECT_TRUE(fresh) << "duplicate key in delta: " << d.key(e);
  }
  return m;
}

uint32_t GroupOf(const std::string& key) { return KeyGroupOf(KeyHash(key), kMaxParallelism); }

// KeyHash is part of the checkpoint format (a key's group is stored with it): these values were
// computed before its tail read lost its memcpy, and must never change.
TEST(KeyHashTest, ValuesAreThoseStoredCheckpointsWereWrittenWith) {
  const std::string_view text = "the quick brown fox jumps over the lazy dog";
  const std::pair<size_t, uint64_t> pinned[] = {
      {0, 0xc622021ac60cdd94ull},  {1, 0x37415219080951a7ull},  {2, 0x1f2d5e4cdf6504e9ull},
      {3, 0x4007653fc0a59f05ull},  {4, 0x63f444032631c5adull},  {5, 0xf1b9af1468a3935bull},
      {7, 0x9f27b3f9909f3ba3ull},  {8, 0xea0949faf935f9efull},  {9, 0xaa3b1152cb31a42dull},
      {12, 0x7a83325fae2791dfull}, {15, 0x430471fb4ef08f91ull}, {16, 0x7023e0a6cbf5f0ccull},
      {17, 0xe6cff6fecafa59a5ull}, {24, 0xadd0d535bb3ec7f4ull}, {25, 0x15af0768c263d17cull},
      {43, 0x7a2a75b38b276294ull}};
  for (const auto& [n, hash] : pinned) EXPECT_EQ(KeyHash(text.substr(0, n)), hash) << "length " << n;
}

// The same hash written the plain way (the tail copied into a zeroed word): every length up to
// 40 and every byte value, read from the middle of a buffer so no read may stray past the key.
TEST(KeyHashTest, EqualsTheHashWithItsTailCopiedIntoAZeroedWord) {
  const auto reference = [](std::string_view s) {
    constexpr uint64_t kP0 = 0xa0761d6478bd642full, kP1 = 0xe7037ed1a0b428dbull, kP2 = 0x8ebc6af09c88c6e3ull;
    auto mix = [](uint64_t a, uint64_t b) {
      __uint128_t r = static_cast<__uint128_t>(a) * b;
      return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
    };
    const char* p = s.data();
    size_t n = s.size();
    uint64_t seed = kP0 ^ n;
    for (; n > 8; p += 8, n -= 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      seed = mix(v ^ kP1, seed ^ kP2);
    }
    uint64_t tail = 0;
    if (n > 0) std::memcpy(&tail, p, n);
    return mix(mix(tail ^ kP1, seed ^ kP2), kP0 ^ s.size());
  };
  std::string buffer(96, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 64; ++round) {
    for (char& c : buffer) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x >> 24);
    }
    for (size_t n = 0; n <= 40; ++n) {
      const std::string_view key(buffer.data() + 24 + round % 8, n);
      ASSERT_EQ(KeyHash(key), reference(key)) << "length " << n << ", round " << round;
    }
  }
  EXPECT_EQ(KeyHash(std::string_view()), reference(std::string_view()));
}

TEST(KeyedStateTest, GetOfAbsentKeyReturnsFalse) {
  auto s = MakeState();
  int64_t v = 42;
  EXPECT_FALSE(s.Get("missing", &v));
  EXPECT_EQ(v, 42);
  EXPECT_EQ(s.size(), 0u);
}

TEST(KeyedStateTest, AddTreatsAbsentAsZeroAndReturnsNewValue) {
  auto s = MakeState();
  EXPECT_EQ(s.Add("a", 5), 5);
  EXPECT_EQ(s.Add("a", -2), 3);
  EXPECT_EQ(s.Add("b", 0), 0);
  int64_t v;
  ASSERT_TRUE(s.Get("a", &v));
  EXPECT_EQ(v, 3);
  ASSERT_TRUE(s.Get("b", &v));
  EXPECT_EQ(v, 0);
  EXPECT_EQ(s.size(), 2u);
}

TEST(KeyedStateTest, PutOverwrites) {
  auto s = MakeState();
  s.Put("k", 7);
  s.Put("k", -9);
  int64_t v;
  ASSERT_TRUE(s.Get("k", &v));
  EXPECT_EQ(v, -9);
  EXPECT_EQ(s.Add("k", 10), 1);
  EXPECT_EQ(s.size(), 1u);
}

TEST(KeyedStateTest, EmptyKeyIsAKey) {
  auto s = MakeState();
  int64_t v;
  EXPECT_FALSE(s.Get("", &v));
  s.Add("", 3);
  ASSERT_TRUE(s.Get("", &v));
  EXPECT_EQ(v, 3);
  EXPECT_EQ(s.size(), 1u);
}

TEST(KeyedStateTest, KeysWithEmbeddedNulAndUtf8AreDistinct) {
  auto s = MakeState();
  const std::string nul1("a\0b", 3), nul2("a\0c", 3), nul3("a", 1), nul4("\0", 1);
  const std::string utf8 = "stra\xc3\x9f" "e", utf8_other = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e";
  s.Put(nul1, 1);
  s.Put(nul2, 2);
  s.Put(nul3, 3);
  s.Put(nul4, 4);
  s.Put(utf8, 5);
  s.Put(utf8_other, 6);
  EXPECT_EQ(s.size(), 6u);
  int64_t v;
  ASSERT_TRUE(s.Get(nul1, &v));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(s.Get(nul2, &v));
  EXPECT_EQ(v, 2);
  ASSERT_TRUE(s.Get(nul3, &v));
  EXPECT_EQ(v, 3);
  ASSERT_TRUE(s.Get(nul4, &v));
  EXPECT_EQ(v, 4);
  ASSERT_TRUE(s.Get(utf8, &v));
  EXPECT_EQ(v, 5);
  ASSERT_TRUE(s.Get(utf8_other, &v));
  EXPECT_EQ(v, 6);
  auto d = DeltaMap(*s.TakeDelta());
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d.at(nul1).second, 1);
  EXPECT_EQ(d.at(nul4).second, 4);
  EXPECT_EQ(d.at(utf8_other).second, 6);
}

TEST(KeyedStateTest, LargeKeysAreStoredIntact) {
  auto s = MakeState();
  const std::string big(3 << 20, 'x');       // larger than an arena block
  const std::string medium(600 << 10, 'y');  // larger than the own-block threshold
  s.Put(big, 1);
  s.Put(medium, 2);
  for (int i = 0; i < 1000; ++i) s.Add("small" + std::to_string(i), i);
  int64_t v;
  ASSERT_TRUE(s.Get(big, &v));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(s.Get(medium, &v));
  EXPECT_EQ(v, 2);
  EXPECT_FALSE(s.Get(std::string(3 << 20, 'z'), &v));
  auto d = DeltaMap(*s.TakeDelta());
  EXPECT_EQ(d.size(), 1002u);
  EXPECT_EQ(d.count(big), 1u);
}

TEST(KeyedStateTest, GrowthThroughManyRehashesKeepsEveryValue) {
  auto s = MakeState();
  std::unordered_map<std::string, int64_t> expected;
  constexpr int kKeys = 1'000'000;
  for (int i = 0; i < kKeys; ++i) {
    std::string k = "key-" + std::to_string(i);
    s.Add(k, i);
    expected[k] += i;
  }
  // A second pass over a subset updates existing entries after all the growth.
  for (int i = 0; i < kKeys; i += 7) {
    std::string k = "key-" + std::to_string(i);
    s.Add(k, 3);
    expected[k] += 3;
  }
  ASSERT_EQ(s.size(), expected.size());
  for (const auto& [k, want] : expected) {
    int64_t v;
    ASSERT_TRUE(s.Get(k, &v)) << k;
    ASSERT_EQ(v, want) << k;
  }
  size_t visited = 0;
  s.ForEach([&](std::string_view k, int64_t v) {
    ++visited;
    auto it = expected.find(std::string(k));
    ASSERT_NE(it, expected.end());
    EXPECT_EQ(it->second, v);
  });
  EXPECT_EQ(visited, expected.size());
}

TEST(KeyedStateTest, TakeDeltaReturnsExactlyChangedKeysWithLatestValuesAndKeyGroups) {
  auto s = MakeState();
  s.Add("a", 1);
  s.Add("b", 2);
  s.Add("a", 10);
  s.Put("c", 5);
  auto d1 = DeltaMap(*s.TakeDelta());
  ASSERT_EQ(d1.size(), 3u);
  EXPECT_EQ(d1.at("a"), std::make_pair(GroupOf("a"), int64_t{11}));
  EXPECT_EQ(d1.at("b"), std::make_pair(GroupOf("b"), int64_t{2}));
  EXPECT_EQ(d1.at("c"), std::make_pair(GroupOf("c"), int64_t{5}));

  s.Add("b", 1);
  s.Put("d", -4);
  auto d2 = DeltaMap(*s.TakeDelta());
  ASSERT_EQ(d2.size(), 2u);
  EXPECT_EQ(d2.at("b"), std::make_pair(GroupOf("b"), int64_t{3}));
  EXPECT_EQ(d2.at("d"), std::make_pair(GroupOf("d"), int64_t{-4}));
}

TEST(KeyedStateTest, SecondTakeDeltaWithoutChangesIsEmpty) {
  auto s = MakeState();
  s.Add("a", 1);
  EXPECT_EQ(s.TakeDelta()->entries.size(), 1u);
  auto d = s.TakeDelta();
  EXPECT_TRUE(d->entries.empty());
  EXPECT_TRUE(d->keys.empty());
}

TEST(KeyedStateTest, UnchangedWritesDoNotMarkExistingEntries) {
  auto s = MakeState();
  s.Put("p", 4);
  s.Add("q", 1);
  s.TakeDelta();
  s.Put("p", 4);  // same value
  s.Add("q", 0);  // no change
  EXPECT_TRUE(s.TakeDelta()->entries.empty());
}

TEST(KeyedStateTest, KeyGroupsInDeltaLieInRangeOfMaxParallelism) {
  auto s = MakeState();
  for (int i = 0; i < 10000; ++i) s.Add(std::to_string(i), 1);
  auto d = s.TakeDelta();
  ASSERT_EQ(d->entries.size(), 10000u);
  for (const auto& e : d->entries) {
    ASSERT_LT(e.key_group, kMaxParallelism);
    ASSERT_EQ(e.key_group, GroupOf(std::string(d->key(e))));
  }
}

TEST(KeyedStateTest, DirtyTrackingSurvivesGrow) {
  auto s = MakeState();
  for (int i = 0; i < 100; ++i) s.Add("early-" + std::to_string(i), i);
  s.TakeDelta();
  // Change a few old keys, then force many rehashes, then change a few more.
  s.Add("early-3", 100);
  s.Put("early-50", -1);
  std::map<std::string, int64_t> expected{{"early-3", 103}, {"early-50", -1}};
  for (int i = 0; i < 200000; ++i) {
    std::string k = "late-" + std::to_string(i);
    s.Add(k, i);
    expected[k] = i;
  }
  s.Add("early-7", 1);
  expected["early-7"] = 8;
  s.Add("late-5", 1);
  expected["late-5"] = 6;

  auto d = DeltaMap(*s.TakeDelta());
  ASSERT_EQ(d.size(), expected.size());
  for (const auto& [k, v] : expected) {
    auto it = d.find(k);
    ASSERT_NE(it, d.end()) << k;
    ASSERT_EQ(it->second.second, v) << k;
  }
  EXPECT_TRUE(s.TakeDelta()->entries.empty());
}

TEST(KeyedStateTest, LoadEntryDoesNotMarkDirty) {
  auto s = MakeState();
  for (int i = 0; i < 50000; ++i) s.LoadEntry("loaded-" + std::to_string(i), i);  // grows too
  EXPECT_EQ(s.size(), 50000u);
  int64_t v;
  ASSERT_TRUE(s.Get("loaded-123", &v));
  EXPECT_EQ(v, 123);
  EXPECT_TRUE(s.TakeDelta()->entries.empty());

  s.Add("loaded-123", 1);
  auto d = DeltaMap(*s.TakeDelta());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.at("loaded-123").second, 124);
}

// LoadEntries (a restore's batches, slots prefetched) is LoadEntry of each: through growth,
// over entries loaded before, not dirty; a key of another subtask is refused and named.
TEST(KeyedStateTest, LoadEntriesInBatchesIsLoadEntryOfEach) {
  auto s = MakeState();
  s.LoadEntry("b-7", -1);
  std::vector<std::string> keys;
  std::vector<int64_t> values;
  for (int i = 0; i < 5000; ++i) {
    keys.push_back("b-" + std::to_string(i));
    values.push_back(i * 3);
  }
  std::vector<std::string_view> views(keys.begin(), keys.end());
  s.LoadEntries(views.data(), values.data(), 1);  // a batch of one
  s.LoadEntries(views.data() + 1, values.data() + 1, views.size() - 1);  // grows several times
  EXPECT_EQ(s.size(), 5000u);
  for (int i = 0; i < 5000; ++i) {
    int64_t v = -1;
    ASSERT_TRUE(s.Get(keys[i], &v)) << i;
    EXPECT_EQ(v, i * 3);
  }
  EXPECT_TRUE(s.TakeDelta()->entries.empty());
  EXPECT_TRUE(s.foreign_key_error().ok());

  const KeyGroupRange half{0, kMaxParallelism / 2 - 1};
  KeyedInt64State h(kMaxParallelism, half);
  std::string foreign;
  for (int i = 0; foreign.empty(); ++i)
    if (!half.Contains(GroupOf("f-" + std::to_string(i)))) foreign = "f-" + std::to_string(i);
  std::string_view one[] = {foreign};
  int64_t v1[] = {1};
  h.LoadEntries(one, v1, 1);
  EXPECT_EQ(h.size(), 0u);
  EXPECT_NE(h.foreign_key_error().message().find(foreign), std::string::npos) << h.foreign_key_error().ToString();
}

// LoadVersioned (a restore's segments visited out of order): a key ends with the entry of the
// highest version whoever came last, removals included, across growth and a second load;
// nothing is dirty, and a key of another subtask is refused.
TEST(KeyedStateTest, VersionedLoadsKeepTheEntryOfTheHighestVersionInAnyOrder) {
  auto s = MakeState();
  s.LoadEntry("before", 1);  // loaded before: version 0
  s.LoadEntry("gone", 2);
  s.BeginVersionedLoad();
  auto load = [&](std::vector<std::pair<std::string, int64_t>> entries, uint8_t version) {
    std::vector<std::string_view> keys;
    std::vector<uint64_t> hashes;
    std::vector<int64_t> values;
    for (const auto& [k, v] : entries) {
      keys.push_back(k);
      hashes.push_back(KeyHash(k));
      values.push_back(v);
    }
    s.LoadVersioned(keys.data(), hashes.data(), values.data(), values.size(), version);
  };
  load({{"a", 30}, {"b", 30}, {"before", 30}}, 3);
  load({{"a", 10}, {"b", 10}, {"c", 10}}, 1);  // older, after: only "c" is new
  load({{"a", 50}}, 5);
  s.LoadRemovalVersioned("b", KeyHash("b"), 4);  // newer than b's 3: removed
  load({{"b", 20}}, 2);  // older than the removal: stays removed
  s.LoadRemovalVersioned("d", KeyHash("d"), 6);  // absent: a removed slot
  load({{"d", 1}}, 1);  // older than the removal: stays removed
  s.LoadRemovalVersioned("a", KeyHash("a"), 2);  // older than a's 5: no effect
  s.LoadRemovalVersioned("gone", KeyHash("gone"), 1);  // newer than the load before: removed
  load({{"e", 7}}, 2);
  s.LoadRemovalVersioned("e", KeyHash("e"), 2);  // the same version later: the later call wins
  load({{"f", 1}}, 3);
  s.LoadRemovalVersioned("f", KeyHash("f"), 2);
  load({{"f", 4}}, 4);  // back after an older removal
  // Growth while loading keeps every version (slots move with their versions).
  std::vector<std::pair<std::string, int64_t>> many;
  for (int i = 0; i < 20000; ++i) many.emplace_back("m" + std::to_string(i), i);
  load(many, 9);
  for (auto& [k, v] : many) v = -v;
  load(many, 8);  // older than the growth's
  std::map<std::string, int64_t> want = {{"a", 50}, {"before", 30}, {"c", 10}, {"f", 4}};
  for (int i = 0; i < 20000; ++i) want["m" + std::to_string(i)] = i;
  EXPECT_EQ(s.size(), want.size());
  std::map<std::string, int64_t> got;
  s.ForEach([&](std::string_view k, int64_t v) { got[std::string(k)] = v; });
  EXPECT_EQ(got, want);
  for (const char* k : {"b", "d", "e", "gone"}) {
    int64_t v;
    EXPECT_FALSE(s.Get(k, &v)) << k;
  }
  EXPECT_TRUE(s.TakeDelta()->entries.empty());
  // A second load starts over: every stored entry is version 0 again.
  s.BeginVersionedLoad();
  load({{"a", 1}}, 1);
  s.LoadRemovalVersioned("c", KeyHash("c"), 1);
  int64_t v = 0;
  ASSERT_TRUE(s.Get("a", &v));
  EXPECT_EQ(v, 1);
  EXPECT_FALSE(s.Get("c", &v));
  s.Put("b", 5);  // a removed key comes back through the ordinary path
  ASSERT_TRUE(s.Get("b", &v));
  EXPECT_EQ(v, 5);
  EXPECT_TRUE(s.foreign_key_error().ok());

  const KeyGroupRange half{0, kMaxParallelism / 2 - 1};
  KeyedInt64State h(kMaxParallelism, half);
  h.BeginVersionedLoad();
  std::string foreign;
  for (int i = 0; foreign.empty(); ++i)
    if (!half.Contains(GroupOf("f-" + std::to_string(i)))) foreign = "f-" + std::to_string(i);
  std::string_view one[] = {foreign};
  uint64_t hash[] = {KeyHash(foreign)};
  int64_t v1[] = {1};
  h.LoadVersioned(one, hash, v1, 1, 1);
  EXPECT_EQ(h.size(), 0u);
  EXPECT_NE(h.foreign_key_error().message().find(foreign), std::string::npos) << h.foreign_key_error().ToString();
}

TEST(KeyedStateTest, ReserveBeforeAndAfterEntriesKeepsEveryEntryFindable) {
  auto s = MakeState();
  s.Reserve(40000);  // empty: sized at once
  for (int i = 0; i < 30000; ++i) s.LoadEntry("r-" + std::to_string(i), i);
  s.Reserve(100000);  // not empty: grown with the entries rehashed
  s.Reserve(10);      // room enough: nothing changes
  for (int i = 30000; i < 60000; ++i) s.LoadEntry("r-" + std::to_string(i), i);
  EXPECT_EQ(s.size(), 60000u);
  for (int i = 0; i < 60000; i += 997) {
    int64_t v = -1;
    ASSERT_TRUE(s.Get("r-" + std::to_string(i), &v)) << i;
    EXPECT_EQ(v, i);
  }
  EXPECT_TRUE(s.TakeDelta()->entries.empty());
}

// A restore loads a changelog segment, i.e. the delta of a table in which every key changed,
// listed in that table's slot order, into a table that starts small and grows. If a slot
// depended on the key's hash alone, the keys would arrive sorted by their home slot in a larger
// table, wrap around the smaller one twice and pile into runs thousands of slots long (measured:
// 1580 probes an insert restoring 1.07M keys a subtask). Each table places keys its own way.
TEST(KeyedStateTest, LoadingATablesDeltaInItsSlotOrderIntoAGrowingTableKeepsProbesShort) {
  const KeyGroupRange half{0, kMaxParallelism / 2 - 1};  // subtask 0 of 2, as in a job
  KeyedInt64State source(kMaxParallelism, half);
  std::vector<std::string> keys;
  const size_t n = 1100000;  // past half of its 2^21 slots: a 2^20 table would overflow
  for (size_t i = 0; keys.size() < n; ++i) {
    std::string k = std::to_string(i);
    if (!half.Contains(GroupOf(k))) continue;
    source.Add(k, static_cast<int64_t>(keys.size()));
    keys.push_back(std::move(k));
  }
  const std::unique_ptr<StateDelta> delta = source.TakeDelta();
  ASSERT_EQ(delta->entries.size(), n);
  std::vector<std::string_view> views;
  std::vector<int64_t> values;
  for (const StateDelta::Entry& e : delta->entries) {
    views.push_back(delta->key(e));
    values.push_back(e.value);
  }
  KeyedInt64State restored(kMaxParallelism, half);
  for (size_t b = 0; b < n; b += 256) {
    restored.LoadEntries(&views[b], &values[b], std::min<size_t>(256, n - b));
    // Between growths too, not only once the last one has spread the keys out again.
    if (b % 51200 == 0) {
      ASSERT_LT(restored.MeanProbeLength(), 3.0) << "after " << b << " keys";
    }
  }
  ASSERT_EQ(restored.size(), n);
  EXPECT_LT(restored.MeanProbeLength(), 3.0);
  EXPECT_LT(source.MeanProbeLength(), 3.0);
  for (size_t j = 0; j < n; ++j) {
    int64_t v = -1;
    ASSERT_TRUE(restored.Get(keys[j], &v)) << keys[j];
    ASSERT_EQ(v, static_cast<int64_t>(j)) << keys[j];
  }
}

// A restore may take the salt of the table whose delta it loads (AdoptSlotOrder): the delta's
// keys, in that table's slot order, then arrive in this table's slot order too. Safe with the
// right key count; with a count far too small (the keys would pile up as in the test above)
// PrepareSlotOrderedLoad or LoadEntries (LoadVersioned alike) takes a fresh salt, and the
// probes stay short.
TEST(KeyedStateTest, ADeltaLoadedUnderItsTablesSaltKeepsProbesShortWhateverTheKeyCountHint) {
  KeyedInt64State source = MakeState();
  const size_t n = 300000;
  for (size_t i = 0; i < n; ++i) source.Add("key-" + std::to_string(i), static_cast<int64_t>(i));
  const std::unique_ptr<StateDelta> delta = source.TakeDelta();
  ASSERT_TRUE(delta->slot_order);
  ASSERT_EQ(delta->table_salt, source.salt());
  ASSERT_EQ(delta->table_keys, n);
  std::vector<std::string_view> views;
  std::vector<uint64_t> hashes;
  std::vector<int64_t> values;
  for (const StateDelta::Entry& e : delta->entries) {
    views.push_back(delta->key(e));
    hashes.push_back(KeyHash(views.back()));
    values.push_back(e.value);
  }
  struct Case {
    const char* name;
    size_t adopt_keys;     // AdoptSlotOrder's hint
    size_t prepare_keys;   // PrepareSlotOrderedLoad's table_keys
    bool keeps_salt;
  };
  for (const Case c : {Case{"the right count", n, n, true}, Case{"a count the load outgrows", 1000, n * 4, false},
                       Case{"a wrong count the writer claims", 1000, 1000, false}})
  for (bool versioned : {false, true}) {
    SCOPED_TRACE(std::string(c.name) + (versioned ? ", LoadVersioned" : ", LoadEntries"));
    KeyedInt64State restored = MakeState();
    restored.AdoptSlotOrder(delta->table_salt, c.adopt_keys);
    ASSERT_EQ(restored.salt(), delta->table_salt);
    restored.PrepareSlotOrderedLoad(delta->table_salt, n, c.prepare_keys);
    if (versioned) restored.BeginVersionedLoad();
    for (size_t b = 0; b < n; b += 256) {
      const size_t m = std::min<size_t>(256, n - b);
      if (versioned) {
        restored.LoadVersioned(&views[b], &hashes[b], &values[b], m, 1);
      } else {
        restored.LoadEntries(&views[b], &values[b], m);
      }
      if (b % 25600 == 0) {
        ASSERT_LT(restored.MeanProbeLength(), 3.0) << "after " << b << " keys";
      }
    }
    EXPECT_EQ(restored.salt() == delta->table_salt, c.keeps_salt);
    ASSERT_EQ(restored.size(), n);
    EXPECT_LT(restored.MeanProbeLength(), 3.0);
    for (size_t i = 0; i < n; i += 7) {
      int64_t v = -1;
      ASSERT_TRUE(restored.Get("key-" + std::to_string(i), &v)) << i;
      ASSERT_EQ(v, static_cast<int64_t>(i));
    }
  }
  // Not empty: the hint is ignored (the entries already in place keep their homes).
  KeyedInt64State used = MakeState();
  used.Add("x", 1);
  const uint64_t own = used.salt();
  used.AdoptSlotOrder(delta->table_salt, n);
  EXPECT_EQ(used.salt(), own);
}

// The delta of a table most of whose entries changed is taken by a scan in slot order: the
// same entries, each once.
TEST(KeyedStateTest, DeltaOfAMostlyChangedTableHoldsEachChangedKeyOnce) {
  auto s = MakeState();
  for (int i = 0; i < 20000; ++i) s.LoadEntry("k-" + std::to_string(i), i);
  for (int i = 0; i < 20000; i += 2) s.Add("k-" + std::to_string(i), 1);
  auto delta = s.TakeDelta();
  EXPECT_EQ(delta->entries.size(), 10000u);
  auto d = DeltaMap(*delta);
  ASSERT_EQ(d.size(), 10000u);
  EXPECT_EQ(d.at("k-0").second, 1);
  EXPECT_EQ(d.at("k-19998").second, 19999);
  EXPECT_EQ(d.count("k-1"), 0u);
}

TEST(KeyedStateTest, DeltaIsIndependentOfLaterChanges) {
  auto s = MakeState();
  s.Add("x", 1);
  auto d = s.TakeDelta();
  for (int i = 0; i < 100000; ++i) s.Add(std::to_string(i) + "-y", 1);
  s.Add("x", 1);
  ASSERT_EQ(d->entries.size(), 1u);
  EXPECT_EQ(d->key(d->entries[0]), "x");
  EXPECT_EQ(d->entries[0].value, 1);
}

// A checkpoint whose keyed state fails to persist hands its delta to the next one, merged with
// that one's (SnapshotPersister). A key changed before each of k failed checkpoints is written
// once, with its latest value, and the carried delta never holds more entries than the state.
TEST(KeyedStateTest, DeltaCarriedOverFailedCheckpointsHoldsEachKeyOnceWithItsLatestValue) {
  auto s = MakeState();
  StateDelta carried;
  constexpr int kFailed = 50;
  for (int k = 1; k <= kFailed; ++k) {
    s.Add("hot", 1);                              // changed before every checkpoint
    s.Put("cold-" + std::to_string(k % 5), k);    // five keys, each changed now and then
    s.Add("new-" + std::to_string(k), k);         // a key first seen in checkpoint k
    carried.Merge(*s.TakeDelta());
    ASSERT_LE(carried.entries.size(), s.size()) << "after failed checkpoint " << k;
  }
  auto m = DeltaMap(carried);  // fails on a duplicate key
  ASSERT_EQ(m.size(), s.size());
  EXPECT_EQ(m.at("hot").second, kFailed);
  EXPECT_EQ(m.at("hot").first, GroupOf("hot"));
  for (int c = 0; c < 5; ++c) EXPECT_EQ(m.at("cold-" + std::to_string(c)).second, kFailed - (kFailed - c) % 5);
  for (int k = 1; k <= kFailed; ++k) EXPECT_EQ(m.at("new-" + std::to_string(k)).second, k);
  // Every entry of the merged delta has the value the state holds now.
  for (const auto& [key, gv] : m) {
    int64_t v = 0;
    ASSERT_TRUE(s.Get(key, &v)) << key;
    EXPECT_EQ(gv.second, v) << key;
  }
  // The key bytes are not copied once per failed checkpoint either.
  size_t key_bytes = 0;
  for (const auto& [key, gv] : m) key_bytes += key.size();
  EXPECT_EQ(carried.keys.size(), key_bytes);
}

TEST(KeyedStateTest, MergeIntoAnEmptyDeltaAndOfAnEmptyDeltaKeepTheEntries) {
  auto s = MakeState();
  s.Add("a", 1);
  s.Add("", 2);  // the empty key is a key
  StateDelta d;
  d.Merge(*s.TakeDelta());
  d.Merge(*s.TakeDelta());  // nothing changed since
  auto m = DeltaMap(d);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("a").second, 1);
  EXPECT_EQ(m.at("").second, 2);
}

// Offsets into a delta's keys are 64-bit, so a carried delta whose keys pass 4 GiB cannot wrap
// an offset onto another key's bytes (the old 32-bit offsets were added to without a check);
// the layout stays 24 bytes per entry.
static_assert(std::is_same_v<decltype(StateDelta::Entry::key_offset), uint64_t>);
static_assert(sizeof(StateDelta::Entry) == 24);

TEST(KeyedStateTest, MergedDeltaEntriesReadTheirOwnKeysAfterManyMerges) {
  // Large keys, each merged in its own round, so that later keys sit at growing offsets.
  auto s = MakeState();
  StateDelta carried;
  std::map<std::string, int64_t> want;
  for (int k = 0; k < 64; ++k) {
    std::string key = std::string(1 << 16, static_cast<char>('a' + k % 26)) + std::to_string(k);
    s.Put(key, k);
    want[key] = k;
    carried.Merge(*s.TakeDelta());
  }
  std::map<std::string, int64_t> got;
  for (const auto& en : carried.entries) got[std::string(carried.key(en))] = en.value;
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace cairn

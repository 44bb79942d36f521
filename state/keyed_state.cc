// KeyedInt64State: an open-addressing hash table (linear probing) over a key arena.
//
// Layout: a power-of-two array of Slots. A key's home slot is the top bits of its KeyHash XORed
// with a random per-table salt and multiplied (Fibonacci hashing, Home()): every bit of the
// hash counts (key groups take its high bits, so one subtask's keys share them), doubling the
// table sends slot i's keys to slots 2i and 2i+1 (growing keeps the order), and no two tables
// order their slots alike unless a restore asks for it. The salt matters: a delta of a large
// table lists its keys in slot order (TakeDelta), and a restore loads it into a table that
// starts small; were the home the hash's bits alone, the keys would arrive sorted by home, wrap
// around the small table more than once and pile into runs thousands of slots long before it
// grows (1580 probes an insert, measured on a restore of 1.07M keys). A restore may adopt the
// writer's salt on purpose (AdoptSlotOrder), with room for all its keys reserved first: the
// keys then arrive in the new table's slot order and loading them sweeps it in order; the
// guards of PrepareSlotOrderedLoad and LoadEntries keep that from ever piling up. A Slot
// stores the full hash, so growing never rehashes a key, and points into an arena of large
// blocks, so keys never move once stored. Changed entries carry a dirty flag, and their slot's
// bit is set in dirty_bits_ (Grow() and Resalt() rebuild it because they move slots): TakeDelta
// visits the changed slots in slot order by scanning that bitmap, 1/256 the size of the slots.
#include "state/keyed_state.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "engine/base/short_bytes.h"

namespace cairn {

namespace {

constexpr size_t kInitialSlots = 1024;        // a power of two
constexpr size_t kArenaBlockSize = 1 << 20;   // 1 MiB
constexpr size_t kOwnBlockThreshold = kArenaBlockSize / 4;  // larger keys get their own block

// LoadEntries takes a fresh salt for an adopted one when a batch's keys lie this many slots past
// their homes on average (about 1 at the maximum load for keys in random order).
constexpr size_t kMaxMeanDisplacement = 16;

// Grow when count would exceed 7/10 of the slots.
size_t GrowThreshold(size_t slots) { return slots / 10 * 7; }

// A valid pointer for the empty key (memcmp/memcpy with a null pointer is undefined).
const char kEmptyKey[1] = {0};

// A different salt for every table: a random start (once per process) stepped by an odd
// constant and mixed, so neither two tables of one process nor the same table in two
// processes (a job and its restore) share one.
uint64_t NewSalt() {
  static std::atomic<uint64_t> next{[] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }()};
  uint64_t z = next.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finalizer
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

// All zero bytes is an empty slot: a new table's slots come zeroed (ZeroedArray), not constructed.
struct KeyedInt64State::Slot {
  uint64_t hash = 0;
  const char* key = nullptr;
  uint32_t key_length = 0;
  bool used = false;
  bool dirty = false;
  bool removed = false;  // Delete()d: Get finds nothing, the next delta records the removal
  uint8_t load_version = 0;  // LoadVersioned: the version of the source that last set it
  int64_t value = 0;
};

KeyedInt64State::KeyedInt64State(uint32_t max_parallelism, KeyGroupRange range)
    : max_parallelism_(max_parallelism),
      range_(range),
      salt_(NewSalt()),
      slots_(kInitialSlots),
      dirty_bits_(kInitialSlots / 64) {
  static_assert(sizeof(Slot) == 32, "a slot is half a cache line");
  SetGeometry();
}

void KeyedInt64State::SetGeometry() {
  const size_t n = slots_.size();
  mask_ = n - 1;
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(n));
  grow_at_ = GrowThreshold(n);
}

KeyedInt64State::~KeyedInt64State() = default;

size_t KeyedInt64State::size() const { return count_ - removed_; }

const char* KeyedInt64State::StoreKey(std::string_view key) {
  if (key.empty()) return kEmptyKey;
  if (key.size() > UINT32_MAX) throw std::length_error("KeyedInt64State: key longer than 4 GiB");
  if (key.size() > kOwnBlockThreshold) {
    arena_blocks_->emplace_back(key.size());
    char* p = arena_blocks_->back().begin();
    std::memcpy(p, key.data(), key.size());
    return p;
  }
  if (key.size() > arena_left_) {
    arena_blocks_->emplace_back(kArenaBlockSize);  // populated at once: its keys fill it soon
    arena_ptr_ = arena_blocks_->back().begin();
    arena_left_ = kArenaBlockSize;
  }
  char* p = arena_ptr_;
  std::memcpy(p, key.data(), key.size());
  arena_ptr_ += key.size();
  arena_left_ -= key.size();
  return p;
}

size_t KeyedInt64State::FindOrInsert(std::string_view key, uint64_t hash, bool* inserted) {
  size_t i = Home(hash);
  for (;;) {
    Slot& s = slots_[i];
    if (!s.used) break;
    if (s.hash == hash && s.key_length == key.size() &&
        EqualShortBytes(s.key, key.data(), key.size())) {
      *inserted = false;
      if (__builtin_expect(s.removed, 0)) {  // back from the dead: a new entry with value 0
        s.removed = false;
        s.value = 0;
        --removed_;
        *inserted = true;
      }
      return i;
    }
    i = (i + 1) & mask_;
  }
  // Absent: insert at the first free slot of the probe sequence (after growing, if due).
  if (count_ + 1 > grow_at_) {
    Grow();
    i = Home(hash);
    while (slots_[i].used) i = (i + 1) & mask_;
  }
  Slot& s = slots_[i];
  s.hash = hash;
  s.key = StoreKey(key);
  s.key_length = static_cast<uint32_t>(key.size());
  s.used = true;
  s.dirty = false;
  s.removed = false;
  s.load_version = 0;
  s.value = 0;
  ++count_;
  *inserted = true;
  return i;
}

size_t KeyedInt64State::Find(std::string_view key, uint64_t hash) const {
  for (size_t i = Home(hash);; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (!s.used) return kNoSlot;
    if (s.hash == hash && s.key_length == key.size() && EqualShortBytes(s.key, key.data(), key.size())) return i;
  }
}

void KeyedInt64State::Grow() {
  const size_t n = slots_.size() * 2;
  if (n - 1 > UINT32_MAX) throw std::length_error("KeyedInt64State: too many entries");
  Rehash(n);
}

void KeyedInt64State::Rehash(size_t n) {
  ZeroedArray<Slot> old(std::move(slots_));
  slots_ = ZeroedArray<Slot>(n);
  SetGeometry();
  // Slots move, so the dirty bits are rebuilt from the flags (same set, new indices).
  dirty_bits_.assign(n / 64, 0);
  for (const Slot& s : old) {
    if (!s.used) continue;
    size_t i = Home(s.hash);
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = s;
    if (s.dirty) dirty_bits_[i >> 6] |= uint64_t{1} << (i & 63);
  }
}

void KeyedInt64State::Reserve(size_t n) {
  if (n > (size_t{1} << 31)) n = size_t{1} << 31;
  if (count_ == 0) {
    size_t slots = slots_.size();
    while (GrowThreshold(slots) < n) slots *= 2;
    if (slots == slots_.size()) return;
    slots_ = ZeroedArray<Slot>(slots);
    dirty_bits_.assign(slots / 64, 0);
    dirty_count_ = 0;
    SetGeometry();
    return;
  }
  while (GrowThreshold(slots_.size()) < n) Grow();
}

void KeyedInt64State::AdoptSlotOrder(uint64_t salt, size_t keys) {
  if (count_ != 0) return;
  salt_ = salt;
  adopted_salt_ = true;
  Reserve(keys);
}

void KeyedInt64State::PrepareSlotOrderedLoad(uint64_t salt, size_t entries, size_t table_keys) {
  if (salt != salt_) return;
  if (count_ + entries <= grow_at_ || (count_ <= table_keys && table_keys <= grow_at_)) return;
  Resalt();
}

void KeyedInt64State::Resalt() {
  salt_ = NewSalt();
  adopted_salt_ = false;
  Rehash(slots_.size());
}

void KeyedInt64State::MarkDirty(size_t slot) {
  Slot& s = slots_[slot];
  if (!s.dirty) {
    s.dirty = true;
    dirty_bits_[slot >> 6] |= uint64_t{1} << (slot & 63);
    ++dirty_count_;
  }
}

int64_t KeyedInt64State::Add(std::string_view key, int64_t delta) { return AddHashed(key, KeyHash(key), delta); }

void KeyedInt64State::PrefetchSlot(uint64_t hash) const { __builtin_prefetch(&slots_[Home(hash)]); }

void KeyedInt64State::PrefetchKey(uint64_t hash) const {
  const Slot& s = slots_[Home(hash)];
  if (s.used) __builtin_prefetch(s.key);
}

Status ForeignKeyError(std::string_view key, uint64_t hash, uint32_t max_parallelism, const KeyGroupRange& range) {
  std::string shown(key.substr(0, 64));
  if (key.size() > 64) shown += "...";
  return Status::Internal("key '" + shown + "' of key group " + std::to_string(KeyGroupOf(hash, max_parallelism)) +
                          " reached the keyed state of a subtask that owns key groups " + range.ToString() +
                          " only: a record was delivered to the wrong subtask");
}

void KeyedInt64State::RecordForeignKey(std::string_view key, uint64_t hash) const {
  if (foreign_key_error_.ok()) foreign_key_error_ = ForeignKeyError(key, hash, max_parallelism_, range_);
}

int64_t KeyedInt64State::AddHashed(std::string_view key, uint64_t hash, int64_t delta) {
  if (__builtin_expect(!Owns(hash), 0)) {
    RecordForeignKey(key, hash);
    return 0;
  }
  bool inserted;
  size_t i = FindOrInsert(key, hash, &inserted);
  Slot& s = slots_[i];
  s.value += delta;
  if (inserted || delta != 0) MarkDirty(i);
  return s.value;
}

bool KeyedInt64State::Get(std::string_view key, int64_t* value) const {
  const uint64_t hash = KeyHash(key);
  if (!Owns(hash)) {
    RecordForeignKey(key, hash);
    return false;
  }
  const size_t i = Find(key, hash);
  if (i == kNoSlot || slots_[i].removed) return false;
  *value = slots_[i].value;
  return true;
}

void KeyedInt64State::Put(std::string_view key, int64_t value) {
  const uint64_t hash = KeyHash(key);
  if (!Owns(hash)) return RecordForeignKey(key, hash);
  bool inserted;
  size_t i = FindOrInsert(key, hash, &inserted);
  Slot& s = slots_[i];
  if (inserted || s.value != value) {
    s.value = value;
    MarkDirty(i);
  }
}

void KeyedInt64State::Delete(std::string_view key) { Remove(key, /*mark_dirty=*/true); }

void KeyedInt64State::Remove(std::string_view key, bool mark_dirty) {
  const uint64_t hash = KeyHash(key);
  if (!Owns(hash)) return RecordForeignKey(key, hash);
  const size_t i = Find(key, hash);
  if (i == kNoSlot) return;
  Slot& s = slots_[i];
  if (s.removed) return;
  s.removed = true;
  s.value = 0;
  ++removed_;
  if (mark_dirty) MarkDirty(i);
}

void KeyedInt64State::LoadEntry(std::string_view key, int64_t value) {
  const uint64_t hash = KeyHash(key);
  if (!Owns(hash)) return RecordForeignKey(key, hash);
  bool inserted;
  size_t i = FindOrInsert(key, hash, &inserted);
  slots_[i].value = value;
}

template <typename Load>
void KeyedInt64State::LoadHashed(const std::string_view* keys, const uint64_t* hashes, size_t n, Load load) {
  // The home slot of the key kAhead places on already on its way: the table of millions of keys
  // misses the cache on every insert, and a rolling window keeps kAhead misses in flight.
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < std::min(kAhead, n); ++i) PrefetchSlot(hashes[i]);
  // Only an adopted salt is watched: slots between each key's home and its slot.
  const bool watch = adopted_salt_;
  size_t displaced = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchSlot(hashes[i + kAhead]);
    if (!Owns(hashes[i])) {
      RecordForeignKey(keys[i], hashes[i]);
      continue;
    }
    const size_t at = load(i);
    if (watch && at != kNoSlot) displaced += (at - Home(hashes[i])) & mask_;
  }
  // An adopted salt whose keys pile up (a wrong hint: PrepareSlotOrderedLoad): a fresh one. The
  // slots move with their values (and load versions).
  if (watch && displaced > n * kMaxMeanDisplacement) Resalt();
}

void KeyedInt64State::LoadEntries(const std::string_view* keys, const int64_t* values, size_t n) {
  // A chunk's keys hashed first (their bytes lie together), then loaded.
  constexpr size_t kChunk = 256;
  uint64_t hashes[kChunk];
  for (size_t b = 0; b < n; b += kChunk) {
    const size_t m = std::min(kChunk, n - b);
    for (size_t i = 0; i < m; ++i) hashes[i] = KeyHash(keys[b + i]);
    LoadHashed(keys + b, hashes, m, [&](size_t i) {
      bool inserted;
      const size_t at = FindOrInsert(keys[b + i], hashes[i], &inserted);
      slots_[at].value = values[b + i];
      return at;
    });
  }
}

void KeyedInt64State::BeginVersionedLoad() {
  for (Slot& s : slots_) s.load_version = 0;
}

void KeyedInt64State::LoadVersioned(const std::string_view* keys, const uint64_t* hashes, const int64_t* values,
                                    size_t n, uint8_t version) {
  LoadHashed(keys, hashes, n, [&](size_t i) {
    size_t at = Find(keys[i], hashes[i]);
    if (at == kNoSlot) {
      bool inserted;
      at = FindOrInsert(keys[i], hashes[i], &inserted);
    } else if (slots_[at].load_version > version) {
      return kNoSlot;  // a later source's entry is in
    }
    Slot& s = slots_[at];
    if (s.removed) {
      s.removed = false;
      --removed_;
    }
    s.value = values[i];
    s.load_version = version;
    return at;
  });
}

void KeyedInt64State::LoadRemovalVersioned(std::string_view key, uint64_t hash, uint8_t version) {
  if (!Owns(hash)) return RecordForeignKey(key, hash);
  size_t at = Find(key, hash);
  if (at == kNoSlot) {
    bool inserted;
    at = FindOrInsert(key, hash, &inserted);
  } else if (slots_[at].load_version > version) {
    return;
  }
  Slot& s = slots_[at];
  if (!s.removed) {
    s.removed = true;
    ++removed_;
  }
  s.value = 0;
  s.load_version = version;
}

double KeyedInt64State::MeanProbeLength() const {
  if (count_ == 0) return 0;
  uint64_t total = 0;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].used) total += ((i - Home(slots_[i].hash)) & mask_) + 1;
  return static_cast<double>(total) / static_cast<double>(count_);
}

std::unique_ptr<StateDelta> KeyedInt64State::TakeDelta() {
  auto delta = std::make_unique<StateDelta>();
  delta->key_owner = arena_blocks_;
  delta->table_salt = salt_;
  delta->table_keys = count_;
  delta->entries.reserve(dirty_count_);
  // The changed slots in slot order: the bitmap's words in turn (skipping the unchanged ones
  // 64 slots at a time), and only the changed slots themselves, at rising addresses. A second
  // cursor runs kPrefetchAhead changed slots ahead and starts their loads: in a large table
  // they lie cache lines apart at irregular strides, which the hardware does not fetch ahead,
  // and one miss after another was most of this synchronous part.
  delta->slot_order = true;
  constexpr size_t kPrefetchAhead = 16;
  const size_t words = dirty_bits_.size();
  size_t ahead_word = 0;
  uint64_t ahead_bits = words > 0 ? dirty_bits_[0] : 0;
  auto prefetch_next = [&] {
    while (ahead_bits == 0) {
      if (++ahead_word >= words) return;
      ahead_bits = dirty_bits_[ahead_word];
    }
    __builtin_prefetch(&slots_[(ahead_word << 6) + static_cast<size_t>(std::countr_zero(ahead_bits))], 1);
    ahead_bits &= ahead_bits - 1;
  };
  for (size_t i = 0; i < kPrefetchAhead; ++i) prefetch_next();
  for (size_t w = 0; w < words; ++w) {
    uint64_t bits = dirty_bits_[w];
    if (bits == 0) continue;
    dirty_bits_[w] = 0;  // the cursor ahead has read this word already
    do {
      prefetch_next();
      Slot& s = slots_[(w << 6) + static_cast<size_t>(std::countr_zero(bits))];
      delta->entries.push_back(StateDelta::Entry{KeyGroupOf(s.hash, max_parallelism_), s.removed, s.key_length,
                                                 reinterpret_cast<uintptr_t>(s.key), s.value});
      s.dirty = false;
      bits &= bits - 1;
    } while (bits != 0);
  }
  dirty_count_ = 0;
  return delta;
}

void StateDelta::Merge(const StateDelta& newer) {
  StateDelta merged;
  merged.entries.reserve(entries.size() + newer.entries.size());
  merged.keys.reserve(keys.size() + newer.keys.size());
  // Key -> its entry in `merged`. The views point into this delta and `newer`, which do not
  // change until the end.
  std::unordered_map<std::string_view, size_t> at;
  at.reserve(entries.size() + newer.entries.size());
  auto add = [&](const StateDelta& from, const Entry& e) {
    auto [it, fresh] = at.try_emplace(from.key(e), merged.entries.size());
    if (!fresh) {
      merged.entries[it->second].value = e.value;  // the later value wins
      merged.entries[it->second].deleted = e.deleted;
      return;
    }
    merged.entries.push_back(Entry{e.key_group, e.deleted, e.key_length, merged.keys.size(), e.value});
    merged.keys.append(from.key(e));
  };
  for (const Entry& e : entries) add(*this, e);
  for (const Entry& e : newer.entries) add(newer, e);
  // Named entries: the later entry for a (state, key) wins.
  std::unordered_map<std::string, size_t> named_at;
  std::vector<NamedEntry> named_merged;
  for (const std::vector<NamedEntry>* from : std::initializer_list<const std::vector<NamedEntry>*>{&named, &newer.named}) {
    for (const NamedEntry& e : *from) {
      std::string id = e.state;
      id.push_back('\0');
      id += e.key;
      auto [it, fresh] = named_at.try_emplace(std::move(id), named_merged.size());
      if (fresh) {
        named_merged.push_back(e);
      } else {
        named_merged[it->second] = e;
      }
    }
  }
  merged.named = std::move(named_merged);
  // The newer staged checkpoint covers everything the older one did.
  merged.obsolete_staged = std::move(obsolete_staged);
  merged.obsolete_staged.insert(merged.obsolete_staged.end(), newer.obsolete_staged.begin(), newer.obsolete_staged.end());
  merged.staged_dir = staged_dir;
  if (!newer.staged_dir.empty()) {
    if (!merged.staged_dir.empty()) merged.obsolete_staged.push_back(merged.staged_dir);
    merged.staged_dir = newer.staged_dir;
  }
  *this = std::move(merged);
}

void KeyedInt64State::ForEach(const std::function<void(std::string_view key, int64_t value)>& fn) const {
  for (const Slot& s : slots_) {
    if (s.used && !s.removed) fn(std::string_view(s.key, s.key_length), s.value);
  }
}

}  // namespace cairn

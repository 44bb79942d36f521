// Changelog segments: encoding and reading.
#include "state/changelog_segment.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <climits>
#include <cassert>
#include <cstring>
#include <cstdint>
#include <memory>

#include "engine/base/file_util.h"
#include "engine/base/short_bytes.h"

namespace cairn {

namespace {
constexpr std::string_view kMagic = "CLG2";
}

std::string ChangelogSegmentName(uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%012llu", kChangelogSegmentPrefix, static_cast<unsigned long long>(seq));
  return buf;
}

bool IsChangelogSegmentName(std::string_view name) { return name.rfind(kChangelogSegmentPrefix, 0) == 0; }

namespace {

// Entry kinds (the first byte of an entry). kTable comes first or not at all.
enum : uint8_t { kPut = 0, kDelete = 1, kNamedPut = 2, kNamedDelete = 3, kTable = 4 };

// A bounds-checked reader of the encoding above.
struct Reader {
  std::string_view in;
  bool Varint(uint64_t* v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
      const uint8_t b = static_cast<uint8_t>(in[0]);
      in.remove_prefix(1);
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  bool Bytes(std::string_view* b) {
    uint64_t n;
    if (!Varint(&n) || n > in.size()) return false;
    *b = in.substr(0, n);
    in.remove_prefix(n);
    return true;
  }
};

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

namespace {

size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

char* PutVarintAt(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Most keys are a few bytes: copied inline (CopyShortBytes), not by a call to memcpy, which a
// segment of hundreds of thousands of entries made once each.
inline char* PutBytesAt(char* p, std::string_view b) {
  p = PutVarintAt(p, b.size());
  CopyShortBytes(p, b.data(), b.size());
  return p + b.size();
}

}  // namespace

std::string EncodeChangelogSegment(const StateDelta& delta) {
  std::string out;
  out.resize(EncodeChangelogSegment(delta, &out).size());
  return out;
}

std::string_view EncodeChangelogSegment(const StateDelta& delta, std::string* buffer) {
  // Sized exactly first (from the entries alone: no pass over the keys), then written in
  // place: a segment of the whole state is tens of megabytes, which growing by appends would
  // copy and fault in about twice.
  size_t size = kMagic.size();
  const bool table = delta.table_keys != 0 && !delta.entries.empty();
  if (table)
    size += 2 + VarintLength(delta.table_salt) + VarintLength(delta.table_keys) + VarintLength(delta.entries.size());
  for (const StateDelta::Entry& e : delta.entries) {
    size += 1 + VarintLength(e.key_group) + VarintLength(e.key_length) + e.key_length;
    if (!e.deleted) size += VarintLength(ZigZag(e.value));
  }
  for (const StateDelta::NamedEntry& e : delta.named) {
    size += 1 + VarintLength(e.state.size()) + e.state.size() + VarintLength(e.key.size()) + e.key.size();
    if (!e.deleted) size += VarintLength(e.value.size()) + e.value.size();
  }
  if (buffer->size() < size) buffer->resize(size);
  char* const start = buffer->data();
  char* p = start;
  std::memcpy(p, kMagic.data(), kMagic.size());
  p += kMagic.size();
  if (table) {
    *p++ = static_cast<char>(kTable);
    *p++ = static_cast<char>(delta.slot_order ? 1 : 0);
    p = PutVarintAt(p, delta.table_salt);
    p = PutVarintAt(p, delta.table_keys);
    p = PutVarintAt(p, delta.entries.size());
  }
  // The keys lie in the table's arena in insertion order and the entries come in slot order:
  // each key is a cache miss unless it is fetched ahead (measured: BM_EncodeChangelogSegment).
  constexpr size_t kAhead = 16;
  const size_t n = delta.entries.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(delta.key(delta.entries[i + kAhead]).data());
    const StateDelta::Entry& e = delta.entries[i];
    *p++ = static_cast<char>(e.deleted ? kDelete : kPut);
    p = PutVarintAt(p, e.key_group);
    p = PutBytesAt(p, delta.key(e));
    if (!e.deleted) p = PutVarintAt(p, ZigZag(e.value));
  }
  for (const StateDelta::NamedEntry& e : delta.named) {
    *p++ = static_cast<char>(e.deleted ? kNamedDelete : kNamedPut);
    p = PutBytesAt(p, e.state);
    p = PutBytesAt(p, e.key);
    if (!e.deleted) p = PutBytesAt(p, e.value);
  }
  assert(static_cast<size_t>(p - start) == size);
  return std::string_view(start, size);
}

namespace {

// Reads the kTable entry at the start of `r`, if there is one, into *t (left empty when there
// is none); false when it is malformed.
bool ReadTableEntry(Reader* r, std::optional<SegmentTable>* t) {
  if (r->in.empty() || static_cast<uint8_t>(r->in[0]) != kTable) return true;
  r->in.remove_prefix(1);
  SegmentTable read;
  uint64_t flags;
  if (!r->Varint(&flags) || flags > 1 || !r->Varint(&read.salt) || !r->Varint(&read.table_keys) ||
      !r->Varint(&read.entries))
    return false;
  read.slot_order = flags == 1;
  *t = read;
  return true;
}

}  // namespace

std::optional<SegmentTable> ChangelogSegmentTable(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  Reader r{bytes.substr(kMagic.size())};
  std::optional<SegmentTable> t;
  if (!ReadTableEntry(&r, &t)) return std::nullopt;
  return t;
}

Status ReadChangelogSegment(const std::string& path, std::string* bytes,
                            const std::function<Status(const ChangelogEntry&)>& fn) {
  CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(path, bytes));
  return ParseChangelogSegment(path, *bytes, fn);
}

Status ParseChangelogSegment(const std::string& path, std::string_view in,
                             const std::function<Status(const ChangelogEntry&)>& fn) {
  ChangelogSegmentReader reader(path, in);
  ChangelogEntry e;
  while (reader.Next(&e)) CAIRN_RETURN_IF_ERROR(fn(e));
  return reader.status();
}

ChangelogSegmentReader::ChangelogSegmentReader(const std::string& path, std::string_view in) : path_(path) {
  if (in.substr(0, kMagic.size()) != kMagic) {
    Fail("no " + std::string(kMagic) + " header");
    return;
  }
  Reader r{in.substr(kMagic.size())};
  std::optional<SegmentTable> table;  // a hint for the loader (ChangelogSegmentTable), skipped here
  if (!ReadTableEntry(&r, &table)) {
    Fail("malformed table entry");
    return;
  }
  in_ = r.in;
}

bool ChangelogSegmentReader::Fail(const std::string& what) {
  status_ = Status::Corruption("changelog segment " + path_ + ": damaged (" + what + ")");
  in_ = {};
  return false;
}

bool ChangelogSegmentReader::Next(ChangelogEntry* e) {
  if (in_.empty()) return false;
  Reader r{in_};
  *e = ChangelogEntry();
  const uint8_t kind = static_cast<uint8_t>(r.in[0]);
  r.in.remove_prefix(1);
  bool ok = kind <= kNamedDelete;
  e->deleted = kind == kDelete || kind == kNamedDelete;
  if (ok && (kind == kPut || kind == kDelete)) {
    uint64_t kg = 0, v = 0;
    ok = r.Varint(&kg) && kg < 65536 && r.Bytes(&e->key) && (e->deleted || r.Varint(&v));
    e->key_group = static_cast<uint32_t>(kg);
    e->int64 = UnZigZag(v);
  } else if (ok) {
    ok = r.Bytes(&e->state) && !e->state.empty() && r.Bytes(&e->key) && (e->deleted || r.Bytes(&e->value));
  }
  if (!ok) return Fail("malformed entry");
  in_ = r.in;
  return true;
}

namespace {

uint64_t EntryHash(const ChangelogEntry& e) {
  return std::hash<std::string_view>()(e.key) * 0x9e3779b97f4a7c15ull ^ std::hash<std::string_view>()(e.state) ^
         e.key_group;
}
bool SameEntry(const ChangelogEntry& a, const ChangelogEntry& b) {
  return a.key_group == b.key_group && a.key == b.key && a.state == b.state;
}

// A set of entries of `out` (by index), open addressing with linear probing: no allocation
// per entry, which a node-based set spends most of a coalescing on. 8 bytes a slot (the
// entry's index and 32 bits of its hash), at most 0.7 full: a coalescing of millions of keys
// holds one slot array beside its entries.
class EntrySet {
 public:
  EntrySet(const std::vector<ChangelogEntry>* out, size_t expected) : out_(out) { Resize(expected * 10 / 7 + 16); }
  // Adds entry `idx` of *out, which no entry in the set equals (a segment holds each key once).
  void AddDistinct(uint32_t idx) {
    Grow();
    const uint64_t h = EntryHash((*out_)[idx]);
    size_t i = h & mask_;
    while (slots_[i].index != kEmpty) i = (i + 1) & mask_;
    slots_[i] = Slot{idx, Tag(h)};
    ++count_;
  }
  // True when no entry of the same (state, key group, key) is in the set; then out->back()
  // (which the caller just appended; `h` its EntryHash) is added.
  bool AddLast(uint64_t h) {
    Grow();
    const uint32_t idx = static_cast<uint32_t>(out_->size() - 1);
    const ChangelogEntry& e = (*out_)[idx];
    const uint32_t tag = Tag(h);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.index == kEmpty) {
        s = Slot{idx, tag};
        ++count_;
        return true;
      }
      if (s.tag == tag && SameEntry((*out_)[s.index], e)) return false;
    }
  }
  // Memory-level parallelism for a look-up of hash `h` (hints only, as the set may grow before
  // it): its home slot; once that is loaded, the entry the slot names; once that is loaded,
  // the entry's key.
  void PrefetchSlot(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }
  void PrefetchEntry(uint64_t h) const {
    const uint32_t idx = slots_[h & mask_].index;
    if (idx != kEmpty) __builtin_prefetch(&(*out_)[idx]);
  }
  void PrefetchKey(uint64_t h) const {
    const uint32_t idx = slots_[h & mask_].index;
    if (idx != kEmpty) __builtin_prefetch((*out_)[idx].key.data());
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint32_t index = kEmpty;
    uint32_t tag = 0;  // the hash's high bits (the low ones chose the slot)
  };
  static uint32_t Tag(uint64_t h) { return static_cast<uint32_t>(h >> 32); }
  void Grow() {
    if ((count_ + 1) * 10 > slots_.size() * 7) Resize(slots_.size() * 2);
  }
  void Resize(size_t want) {
    size_t n = 16;
    while (n < want) n *= 2;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    for (const Slot& s : old) {
      if (s.index == kEmpty) continue;
      size_t i = EntryHash((*out_)[s.index]) & mask_;
      while (slots_[i].index != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  const std::vector<ChangelogEntry>* out_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

// The entries of an older segment on their way into `out` through `seen`, each looked up
// kDepth entries after it came: its home slot is prefetched when it comes, the entry that slot
// names kDepth / 2 entries later, that entry's key 3 * kDepth / 4 entries later, so that all
// three are likely in the cache at the look-up. A segment's entries lie in the writer's slot
// order, so their slots here, and the entries those name, are at random.
class OlderEntries {
 public:
  OlderEntries(EntrySet* seen, std::vector<ChangelogEntry>* out) : seen_(seen), out_(out) {}
  void Add(const ChangelogEntry& e) {
    if (n_ == kDepth) AddOldest();
    const uint64_t h = EntryHash(e);
    seen_->PrefetchSlot(h);
    const size_t at = (head_ + n_) % kDepth;
    pending_[at] = Pending{e, h};
    ++n_;
    if (n_ > kDepth / 2) seen_->PrefetchEntry(pending_[(at + kDepth - kDepth / 2) % kDepth].hash);
    if (n_ > 3 * kDepth / 4) seen_->PrefetchKey(pending_[(at + kDepth - 3 * kDepth / 4) % kDepth].hash);
  }
  // Adds the entries still pending, in order.
  void Finish() {
    while (n_ > 0) AddOldest();
  }

 private:
  static constexpr size_t kDepth = 16;
  struct Pending {
    ChangelogEntry entry;
    uint64_t hash = 0;
  };
  void AddOldest() {
    const Pending& p = pending_[head_];
    out_->push_back(p.entry);
    if (!seen_->AddLast(p.hash)) out_->pop_back();
    head_ = (head_ + 1) % kDepth;
    --n_;
  }
  EntrySet* const seen_;
  std::vector<ChangelogEntry>* const out_;
  std::array<Pending, kDepth> pending_;
  size_t head_ = 0;
  size_t n_ = 0;
};

}  // namespace

Status CoalesceChangelogSegments(const std::vector<std::string>& paths, std::vector<std::string>* buffers,
                                 std::vector<ChangelogEntry>* out, const std::atomic<bool>* stop) {
  buffers->assign(paths.size(), std::string());
  out->clear();
  std::unique_ptr<EntrySet> seen;
  // Newest first: an entry of a key already seen is older, and superseded. A segment holds
  // each key once, so the newest needs no look-up, and sizes the set.
  for (size_t i = paths.size(); i-- > 0;) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return Status::Aborted("stopped");
    const bool newest = i + 1 == paths.size();
    if (newest) {
      CAIRN_RETURN_IF_ERROR(ReadChangelogSegment(paths[i], &(*buffers)[i], [&](const ChangelogEntry& e) {
        out->push_back(e);
        return Status::OK();
      }));
    } else {
      OlderEntries older(seen.get(), out);
      CAIRN_RETURN_IF_ERROR(ReadChangelogSegment(paths[i], &(*buffers)[i], [&](const ChangelogEntry& e) {
        older.Add(e);
        return Status::OK();
      }));
      older.Finish();
    }
    if (newest && paths.size() > 1) {
      // The newest segment's entries into the set (they are distinct), sized for them: the
      // older segments of a state whose keys all change add few.
      seen = std::make_unique<EntrySet>(out, out->size());
      for (size_t k = 0; k < out->size(); ++k) seen->AddDistinct(static_cast<uint32_t>(k));
    }
  }
  // Named states' stored keys begin with the key group (EncodeEntryKey): their byte order is
  // the stored order; the default state's is (key group, key).
  std::sort(out->begin(), out->end(), [](const ChangelogEntry& a, const ChangelogEntry& b) {
    if (a.state != b.state) return a.state < b.state;
    if (a.key_group != b.key_group) return a.key_group < b.key_group;
    return a.key < b.key;
  });
  return Status::OK();
}

}  // namespace cairn

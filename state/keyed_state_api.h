// The operator-facing keyed-state API: named ValueState, MapState and ListState over typed
// values, declared in Operator::Open through the subtask's KeyedStateBackend
// (OperatorContext::keyed), with explicit keys (there is no "current key": a call names the
// record's key bytes, and may pass its precomputed KeyHash for batched paths).
//
//   ValueState<int64_t>* total;
//   MapState<std::string, double>* last_price;
//   CAIRN_RETURN_IF_ERROR(ctx.keyed->GetValueState("total", &total));
//   CAIRN_RETURN_IF_ERROR(ctx.keyed->GetMapState("last_price", &last_price));
//   ...
//   int64_t t = 0;
//   total->Get(key, &t);
//   total->Put(key, t + 1);
//
// Values are typed through Serializer<T>: int64_t, double, bool and std::string are built in; a
// user type specialises Serializer (kName, Write, Read; see below). Underneath, every state is
// bytes in a KeyedStateBackend: a per-subtask store of (state, key group, key [, user key]) ->
// value bytes, implemented by the heap backend (in-memory tables with change tracking,
// state/heap_keyed_state.h) and the RocksDB backend (a working RocksDB,
// state/rocksdb_state_store.h). Both write the same checkpoint format, so a checkpoint of one
// restores into the other (docs/state.md).
//
// Contract: a KeyedStateBackend and the states it hands out are used by the subtask's task
// thread only (and by Open before it starts). A state's pointer stays valid for the life of the
// backend; declaring the same name again returns the same state, declaring it with another kind
// or type is InvalidArgument. Keys must belong to the subtask's key groups: a key outside them
// is never stored (its write is ignored, its read finds nothing) and foreign_key_error() names
// it, which fails the task. The state named "" (kDefaultStateName) is the one ValueState<int64_t>
// that the heap backend keeps in its fast KeyedInt64State (what `count` and `bank_accounts`
// use); it exists in every checkpoint of a keyed operator.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/base/status.h"
#include "state/keyed_state.h"
#include "state/serializer.h"

namespace cairn {

template <class T>
class ValueState;
template <class UK, class UV>
class MapState;
template <class T>
class ListState;

// ---- The byte level.

enum class StateKind : uint8_t { kValue, kMap, kList };
const char* StateKindName(StateKind k);  // "value", "map", "list"

// What a state is: its kind, its value type(s) (Serializer kName; a map's is "<uk>,<uv>") and
// its name. Stored with the state as "<kind>/<type>/<name>" (a RocksDB column family name).
struct StateDescriptor {
  StateKind kind = StateKind::kValue;
  std::string type;
  std::string name;

  std::string Encode() const;
  // false when `s` is not "<kind>/<type>/<name>" with a known kind.
  static bool Decode(std::string_view s, StateDescriptor* out);
  bool operator==(const StateDescriptor& o) const { return kind == o.kind && type == o.type && name == o.name; }
};

inline constexpr const char* kDefaultStateName = "";

// The stored form of an entry's key: key group (2 bytes, big-endian) + key for value and list
// states; key group + key length (4 bytes, big-endian) + key + user key for map states, so the
// entries of one key are one contiguous, ordered range.
std::string EncodeEntryKey(StateKind kind, uint32_t key_group, std::string_view key, std::string_view user_key);
// Splits a stored key; false when malformed.
bool DecodeEntryKey(StateKind kind, std::string_view stored, uint32_t* key_group, std::string_view* key,
                    std::string_view* user_key);
// A list state's value: its elements, each a 4-byte big-endian length and the bytes.
void AppendListElement(std::string* list, std::string_view element);
bool SplitList(std::string_view list, std::vector<std::string_view>* elements);

using StateId = uint32_t;

class KeyedStateBackend {
 public:
  KeyedStateBackend(uint32_t max_parallelism, KeyGroupRange range) : max_parallelism_(max_parallelism), range_(range) {}
  virtual ~KeyedStateBackend() = default;
  KeyedStateBackend(const KeyedStateBackend&) = delete;
  KeyedStateBackend& operator=(const KeyedStateBackend&) = delete;

  // Typed states by name (see the top of this file). Each returns InvalidArgument when `name`
  // was declared (or restored) with another kind or type, or when the backend cannot make it.
  template <class T>
  Status GetValueState(const std::string& name, ValueState<T>** out);
  template <class UK, class UV>
  Status GetMapState(const std::string& name, MapState<UK, UV>** out);
  template <class T>
  Status GetListState(const std::string& name, ListState<T>** out);

  // ---- Bytes, for the typed states (and tests). `hash` is KeyHash(key).
  virtual Status Declare(const StateDescriptor& d, StateId* id) = 0;
  virtual bool Get(StateId id, std::string_view key, uint64_t hash, std::string_view user_key, std::string* value) = 0;
  virtual void Put(StateId id, std::string_view key, uint64_t hash, std::string_view user_key, std::string_view value) = 0;
  virtual void Delete(StateId id, std::string_view key, uint64_t hash, std::string_view user_key) = 0;
  // Map states: visits the user keys of `key` in byte order.
  virtual void ForEachUserKey(StateId id, std::string_view key, uint64_t hash,
                              const std::function<void(std::string_view uk, std::string_view value)>& fn) = 0;
  // List states: appends one element (AppendListElement) to the list of `key`.
  virtual void AppendToList(StateId id, std::string_view key, uint64_t hash, std::string_view element);
  // Every entry of state `id` (unordered), for summaries and tests: key, user key, value.
  virtual void ForEachEntry(StateId id,
                            const std::function<void(std::string_view key, std::string_view uk, std::string_view value)>& fn) = 0;

  // The synchronous part of a snapshot (on the task thread): *out receives what the
  // StateStore needs to persist this checkpoint (the heap backend: the changed entries; the
  // RocksDB backend: a local RocksDB checkpoint). A failure declines the checkpoint.
  virtual Status Snapshot(std::unique_ptr<StateDelta>* out) = 0;
  // Live entries of every state (approximate for RocksDB).
  virtual size_t size() const = 0;

  // OK, or the first key seen outside range() (a record delivered to the wrong subtask; such a
  // key is never stored), or the first storage error of the RocksDB backend. The task fails
  // with it after the batch (engine/runtime/task.cc).
  const Status& foreign_key_error() const { return foreign_key_error_; }
  uint32_t max_parallelism() const { return max_parallelism_; }
  const KeyGroupRange& range() const { return range_; }

 protected:
  // False (and foreign_key_error() set) when the key of `hash` is not this subtask's.
  bool Owns(std::string_view key, uint64_t hash) {
    if (__builtin_expect(range_.Contains(KeyGroupOf(hash, max_parallelism_)), 1)) return true;
    RecordForeignKey(key, hash);
    return false;
  }
  void RecordForeignKey(std::string_view key, uint64_t hash);
  void RecordError(Status s) {
    if (foreign_key_error_.ok()) foreign_key_error_ = std::move(s);
  }

 private:
  struct TypedHolder {
    virtual ~TypedHolder() = default;
  };
  template <class S>
  Status GetTyped(const StateDescriptor& d, S** out);

  const uint32_t max_parallelism_;
  const KeyGroupRange range_;
  Status foreign_key_error_;
  std::map<std::string, std::unique_ptr<TypedHolder>> typed_;  // by StateDescriptor::Encode()
};

// ---- Typed states: thin wrappers that serialize and call the backend.

template <class T>
class ValueState {
 public:
  ValueState(KeyedStateBackend* b, StateId id) : b_(b), id_(id) {}
  // True and *v set when `key` has a value (a value that does not deserialize counts as absent).
  bool Get(std::string_view key, T* v) { return Get(key, KeyHash(key), v); }
  bool Get(std::string_view key, uint64_t hash, T* v) {
    if (!b_->Get(id_, key, hash, {}, &buf_)) return false;
    return Serializer<T>::Read(buf_, v);
  }
  void Put(std::string_view key, const T& v) { Put(key, KeyHash(key), v); }
  void Put(std::string_view key, uint64_t hash, const T& v) {
    buf_.clear();
    Serializer<T>::Write(v, &buf_);
    b_->Put(id_, key, hash, {}, buf_);
  }
  void Clear(std::string_view key) { b_->Delete(id_, key, KeyHash(key), {}); }
  void Clear(std::string_view key, uint64_t hash) { b_->Delete(id_, key, hash, {}); }
  // Every (key, value) of the subtask, unordered (summaries; a scan of the whole state).
  void ForEach(const std::function<void(std::string_view key, const T& v)>& fn) {
    b_->ForEachEntry(id_, [&](std::string_view key, std::string_view, std::string_view bytes) {
      T v;
      if (Serializer<T>::Read(bytes, &v)) fn(key, v);
    });
  }

 private:
  KeyedStateBackend* b_;
  StateId id_;
  std::string buf_;
};

template <class UK, class UV>
class MapState {
 public:
  MapState(KeyedStateBackend* b, StateId id) : b_(b), id_(id) {}
  bool Get(std::string_view key, const UK& uk, UV* v) {
    ukbuf_.clear();
    Serializer<UK>::Write(uk, &ukbuf_);
    if (!b_->Get(id_, key, KeyHash(key), ukbuf_, &buf_)) return false;
    return Serializer<UV>::Read(buf_, v);
  }
  bool Contains(std::string_view key, const UK& uk) {
    ukbuf_.clear();
    Serializer<UK>::Write(uk, &ukbuf_);
    return b_->Get(id_, key, KeyHash(key), ukbuf_, &buf_);
  }
  void Put(std::string_view key, const UK& uk, const UV& v) {
    ukbuf_.clear();
    Serializer<UK>::Write(uk, &ukbuf_);
    buf_.clear();
    Serializer<UV>::Write(v, &buf_);
    b_->Put(id_, key, KeyHash(key), ukbuf_, buf_);
  }
  void Remove(std::string_view key, const UK& uk) {
    ukbuf_.clear();
    Serializer<UK>::Write(uk, &ukbuf_);
    b_->Delete(id_, key, KeyHash(key), ukbuf_);
  }
  // In the byte order of the serialized user keys; entries that do not deserialize are skipped.
  void ForEach(std::string_view key, const std::function<void(const UK&, const UV&)>& fn) {
    b_->ForEachUserKey(id_, key, KeyHash(key), [&](std::string_view uk, std::string_view v) {
      UK k;
      UV val;
      if (Serializer<UK>::Read(uk, &k) && Serializer<UV>::Read(v, &val)) fn(k, val);
    });
  }
  // Removes every user key of `key`.
  void Clear(std::string_view key) {
    std::vector<std::string> uks;
    b_->ForEachUserKey(id_, key, KeyHash(key), [&](std::string_view uk, std::string_view) { uks.emplace_back(uk); });
    for (const std::string& uk : uks) b_->Delete(id_, key, KeyHash(key), uk);
  }

 private:
  KeyedStateBackend* b_;
  StateId id_;
  std::string ukbuf_, buf_;
};

template <class T>
class ListState {
 public:
  ListState(KeyedStateBackend* b, StateId id) : b_(b), id_(id) {}
  void Add(std::string_view key, const T& v) {
    buf_.clear();
    Serializer<T>::Write(v, &buf_);
    b_->AppendToList(id_, key, KeyHash(key), buf_);
  }
  // *out = the elements of `key` in insertion order (empty when none); elements that do not
  // deserialize are skipped.
  void Get(std::string_view key, std::vector<T>* out) {
    out->clear();
    if (!b_->Get(id_, key, KeyHash(key), {}, &buf_)) return;
    std::vector<std::string_view> elements;
    if (!SplitList(buf_, &elements)) return;
    for (std::string_view e : elements) {
      T v;
      if (Serializer<T>::Read(e, &v)) out->push_back(std::move(v));
    }
  }
  // Replaces the list of `key` (an empty list clears it).
  void Update(std::string_view key, const std::vector<T>& values) {
    if (values.empty()) return Clear(key);
    std::string list, e;
    for (const T& v : values) {
      e.clear();
      Serializer<T>::Write(v, &e);
      AppendListElement(&list, e);
    }
    b_->Put(id_, key, KeyHash(key), {}, list);
  }
  void Clear(std::string_view key) { b_->Delete(id_, key, KeyHash(key), {}); }

 private:
  KeyedStateBackend* b_;
  StateId id_;
  std::string buf_;
};

// ---- Declaration.

template <class S>
Status KeyedStateBackend::GetTyped(const StateDescriptor& d, S** out) {
  struct Holder : TypedHolder {
    explicit Holder(S s) : state(std::move(s)) {}
    S state;
  };
  const std::string encoded = d.Encode();
  auto it = typed_.find(encoded);
  if (it == typed_.end()) {
    StateId id;
    CAIRN_RETURN_IF_ERROR(Declare(d, &id));
    it = typed_.emplace(encoded, std::make_unique<Holder>(S(this, id))).first;
  }
  *out = &static_cast<Holder*>(it->second.get())->state;
  return Status::OK();
}

template <class T>
Status KeyedStateBackend::GetValueState(const std::string& name, ValueState<T>** out) {
  return GetTyped(StateDescriptor{StateKind::kValue, Serializer<T>::kName, name}, out);
}
template <class UK, class UV>
Status KeyedStateBackend::GetMapState(const std::string& name, MapState<UK, UV>** out) {
  return GetTyped(
      StateDescriptor{StateKind::kMap, std::string(Serializer<UK>::kName) + "," + Serializer<UV>::kName, name}, out);
}
template <class T>
Status KeyedStateBackend::GetListState(const std::string& name, ListState<T>** out) {
  return GetTyped(StateDescriptor{StateKind::kList, Serializer<T>::kName, name}, out);
}

}  // namespace cairn

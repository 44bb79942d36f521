// HeapKeyedStateBackend: the default state in a KeyedInt64State, named states in ordered maps
// with a list of changed keys.
#include "state/heap_keyed_state.h"

namespace cairn {

namespace {

bool IsDefault(const StateDescriptor& d) { return d.name == kDefaultStateName; }
const StateDescriptor kDefaultDescriptor{StateKind::kValue, Serializer<int64_t>::kName, kDefaultStateName};

}  // namespace

HeapKeyedStateBackend::HeapKeyedStateBackend(KeyedInt64State* int64)
    : KeyedStateBackend(int64->max_parallelism(), int64->range()), int64_(int64) {}

HeapKeyedStateBackend::~HeapKeyedStateBackend() = default;

HeapKeyedStateBackend::Table* HeapKeyedStateBackend::FindOrAddTable(const StateDescriptor& d, StateId* id) {
  for (size_t i = 0; i < tables_.size(); ++i) {
    if (tables_[i]->desc.name == d.name) {
      *id = static_cast<StateId>(i + 1);
      return tables_[i].get();
    }
  }
  auto t = std::make_unique<Table>();
  t->desc = d;
  t->encoded = d.Encode();
  tables_.push_back(std::move(t));
  *id = static_cast<StateId>(tables_.size());
  return tables_.back().get();
}

Status HeapKeyedStateBackend::Declare(const StateDescriptor& d, StateId* id) {
  if (IsDefault(d)) {
    if (!(d == kDefaultDescriptor))
      return Status::InvalidArgument("the default keyed state (name \"\") is a value state of int64, not " +
                                     std::string(StateKindName(d.kind)) + " of " + d.type);
    *id = 0;
    return Status::OK();
  }
  Table* t = FindOrAddTable(d, id);
  if (!(t->desc == d))
    return Status::InvalidArgument("keyed state '" + d.name + "' is a " + StateKindName(t->desc.kind) + " state of " +
                                   t->desc.type + ", not a " + StateKindName(d.kind) + " state of " + d.type);
  return Status::OK();
}

bool HeapKeyedStateBackend::Get(StateId id, std::string_view key, uint64_t hash, std::string_view user_key,
                                std::string* value) {
  if (id == 0) {  // the table checks the key group itself (KeyedInt64State::foreign_key_error)
    int64_t v;
    if (!int64_->Get(key, &v)) return false;
    value->clear();
    Serializer<int64_t>::Write(v, value);
    return true;
  }
  if (!Owns(key, hash)) return false;
  Table* t = table(id);
  key_buf_ = EncodeEntryKey(t->desc.kind, KeyGroupOf(hash, max_parallelism()), key, user_key);
  auto it = t->rows.find(key_buf_);
  if (it == t->rows.end() || it->second.removed) return false;
  value->assign(it->second.value);
  return true;
}

void HeapKeyedStateBackend::Touch(Table* t, const std::string& stored, Entry* e) {
  if (!e->dirty) {
    e->dirty = true;
    t->dirty.push_back(stored);
  }
}

void HeapKeyedStateBackend::Put(StateId id, std::string_view key, uint64_t hash, std::string_view user_key,
                                std::string_view value) {
  if (id == 0) {
    int64_t v = 0;
    if (Serializer<int64_t>::Read(value, &v)) int64_->Put(key, v);
    return;
  }
  if (!Owns(key, hash)) return;
  Table* t = table(id);
  key_buf_ = EncodeEntryKey(t->desc.kind, KeyGroupOf(hash, max_parallelism()), key, user_key);
  auto [it, fresh] = t->rows.try_emplace(key_buf_);
  Entry& e = it->second;
  if (fresh || e.removed) ++t->live;
  e.removed = false;
  e.value.assign(value.data(), value.size());
  Touch(t, it->first, &e);
}

void HeapKeyedStateBackend::Delete(StateId id, std::string_view key, uint64_t hash, std::string_view user_key) {
  if (id == 0) return int64_->Delete(key);
  if (!Owns(key, hash)) return;
  Table* t = table(id);
  key_buf_ = EncodeEntryKey(t->desc.kind, KeyGroupOf(hash, max_parallelism()), key, user_key);
  auto it = t->rows.find(key_buf_);
  if (it == t->rows.end() || it->second.removed) return;
  it->second.removed = true;
  it->second.value.clear();
  --t->live;
  Touch(t, it->first, &it->second);
}

void HeapKeyedStateBackend::ForEachUserKey(StateId id, std::string_view key, uint64_t hash,
                                           const std::function<void(std::string_view, std::string_view)>& fn) {
  if (!Owns(key, hash) || id == 0) return;
  Table* t = table(id);
  if (t->desc.kind != StateKind::kMap) return;
  const std::string prefix = EncodeEntryKey(StateKind::kMap, KeyGroupOf(hash, max_parallelism()), key, {});
  for (auto it = t->rows.lower_bound(prefix); it != t->rows.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (it->second.removed) continue;
    fn(std::string_view(it->first).substr(prefix.size()), it->second.value);
  }
}

void HeapKeyedStateBackend::AppendToList(StateId id, std::string_view key, uint64_t hash, std::string_view element) {
  if (!Owns(key, hash) || id == 0) return;
  Table* t = table(id);
  key_buf_ = EncodeEntryKey(t->desc.kind, KeyGroupOf(hash, max_parallelism()), key, {});
  auto [it, fresh] = t->rows.try_emplace(key_buf_);
  Entry& e = it->second;
  if (fresh || e.removed) {
    ++t->live;
    e.removed = false;
    e.value.clear();
  }
  AppendListElement(&e.value, element);  // in place: no copy of the list
  Touch(t, it->first, &e);
}

void HeapKeyedStateBackend::ForEachEntry(
    StateId id, const std::function<void(std::string_view, std::string_view, std::string_view)>& fn) {
  if (id == 0) {
    std::string v;
    int64_->ForEach([&](std::string_view key, int64_t value) {
      v.clear();
      Serializer<int64_t>::Write(value, &v);
      fn(key, {}, v);
    });
    return;
  }
  Table* t = table(id);
  for (const auto& [stored, e] : t->rows) {
    if (e.removed) continue;
    uint32_t kg;
    std::string_view key, uk;
    if (DecodeEntryKey(t->desc.kind, stored, &kg, &key, &uk)) fn(key, uk, e.value);
  }
}

Status HeapKeyedStateBackend::Snapshot(std::unique_ptr<StateDelta>* out) {
  std::unique_ptr<StateDelta> delta = int64_->TakeDelta();
  for (auto& t : tables_) {
    for (const std::string& stored : t->dirty) {
      auto it = t->rows.find(stored);
      if (it == t->rows.end()) continue;
      Entry& e = it->second;
      delta->named.push_back(StateDelta::NamedEntry{t->encoded, stored, e.value, e.removed});
      e.dirty = false;
      if (e.removed) t->rows.erase(it);
    }
    t->dirty.clear();
  }
  *out = std::move(delta);
  return Status::OK();
}

size_t HeapKeyedStateBackend::size() const {
  size_t n = int64_->size();
  for (const auto& t : tables_) n += t->live;
  return n;
}

Status HeapKeyedStateBackend::LoadNamed(std::string_view state, std::string_view stored_key, std::string_view value) {
  StateDescriptor d;
  uint32_t kg;
  std::string_view key, uk;
  if (!StateDescriptor::Decode(state, &d) || IsDefault(d) || !DecodeEntryKey(d.kind, stored_key, &kg, &key, &uk))
    return Status::Corruption("keyed state '" + std::string(state) + "': malformed entry");
  if (!range().Contains(kg))
    return Status::Corruption("keyed state '" + std::string(state) + "' holds key group " + std::to_string(kg) +
                              " outside the range " + range().ToString());
  StateId id;
  Table* t = FindOrAddTable(d, &id);
  if (!(t->desc == d)) return Status::Corruption("keyed state '" + d.name + "' is stored with two types");
  auto [it, fresh] = t->rows.try_emplace(std::string(stored_key));
  if (fresh) ++t->live;
  it->second.value.assign(value.data(), value.size());
  return Status::OK();
}

}  // namespace cairn

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

size_t HeapKeyedStateBackend::ProbeHash::operator()(const std::string& k) const {
  return static_cast<size_t>(KeyHash(k));
}

HeapKeyedStateBackend::Entry* HeapKeyedStateBackend::Find(Table* t, std::string_view key, uint64_t hash,
                                                          std::string_view user_key, bool create,
                                                          Rows::value_type** rows, const std::string** uk) {
  auto it = t->rows.find(Probe{key, hash});
  if (it == t->rows.end()) {
    if (!create) return nullptr;
    it = t->rows.emplace(std::string(key), KeyRows{}).first;
    it->second.key_group = KeyGroupOf(hash, max_parallelism());
    it->second.single.removed = true;
  }
  *rows = &*it;
  KeyRows& k = it->second;
  if (t->desc.kind != StateKind::kMap) {
    *uk = nullptr;
    return &k.single;
  }
  auto e = k.by_user_key.find(user_key);
  if (e == k.by_user_key.end()) {
    if (!create) return nullptr;
    e = k.by_user_key.emplace(std::string(user_key), Entry{}).first;
    e->second.removed = true;
  }
  *uk = &e->first;
  return &e->second;
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
  Rows::value_type* rows;
  const std::string* uk;
  Entry* e = Find(table(id), key, hash, user_key, false, &rows, &uk);
  if (e == nullptr || e->removed) return false;
  value->assign(e->value);
  return true;
}

void HeapKeyedStateBackend::Touch(Table* t, Rows::value_type* rows, const std::string* uk, Entry* e) {
  if (!e->dirty) {
    e->dirty = true;
    t->dirty.push_back(Dirty{rows, uk, e});
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
  Rows::value_type* rows;
  const std::string* uk;
  Entry* e = Find(t, key, hash, user_key, true, &rows, &uk);
  if (e->removed) ++t->live;
  e->removed = false;
  e->value.assign(value.data(), value.size());
  Touch(t, rows, uk, e);
}

void HeapKeyedStateBackend::Delete(StateId id, std::string_view key, uint64_t hash, std::string_view user_key) {
  if (id == 0) return int64_->Delete(key);
  if (!Owns(key, hash)) return;
  Table* t = table(id);
  Rows::value_type* rows;
  const std::string* uk;
  Entry* e = Find(t, key, hash, user_key, false, &rows, &uk);
  if (e == nullptr || e->removed) return;
  e->removed = true;
  e->value.clear();
  --t->live;
  Touch(t, rows, uk, e);
}

void HeapKeyedStateBackend::ForEachUserKey(StateId id, std::string_view key, uint64_t hash,
                                           const std::function<void(std::string_view, std::string_view)>& fn) {
  if (!Owns(key, hash) || id == 0) return;
  Table* t = table(id);
  if (t->desc.kind != StateKind::kMap) return;
  auto it = t->rows.find(Probe{key, hash});
  if (it == t->rows.end()) return;
  for (const auto& [uk, e] : it->second.by_user_key)
    if (!e.removed) fn(uk, e.value);
}

void HeapKeyedStateBackend::AppendToList(StateId id, std::string_view key, uint64_t hash, std::string_view element) {
  if (!Owns(key, hash) || id == 0) return;
  Table* t = table(id);
  Rows::value_type* rows;
  const std::string* uk;
  Entry* e = Find(t, key, hash, {}, true, &rows, &uk);
  if (e->removed) {
    ++t->live;
    e->removed = false;
    e->value.clear();
  }
  AppendListElement(&e->value, element);  // in place: no copy of the list
  Touch(t, rows, uk, e);
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
  for (const auto& [key, k] : t->rows) {
    if (t->desc.kind != StateKind::kMap) {
      if (!k.single.removed) fn(key, {}, k.single.value);
      continue;
    }
    for (const auto& [uk, e] : k.by_user_key)
      if (!e.removed) fn(key, uk, e.value);
  }
}

Status HeapKeyedStateBackend::Snapshot(std::unique_ptr<StateDelta>* out) {
  std::unique_ptr<StateDelta> delta = int64_->TakeDelta();
  for (auto& t : tables_) {
    delta->named.reserve(delta->named.size() + t->dirty.size());
    // Entries first, erasures after: a dirty entry's node stays valid until every one is read.
    for (const Dirty& d : t->dirty) {
      Entry& e = *d.entry;
      delta->named.push_back(StateDelta::NamedEntry{
          t->encoded,
          EncodeEntryKey(t->desc.kind, d.rows->second.key_group, d.rows->first,
                         d.user_key == nullptr ? std::string_view() : std::string_view(*d.user_key)),
          e.value, e.removed});
      e.dirty = false;
    }
    for (const Dirty& d : t->dirty) {
      if (!d.entry->removed) continue;
      KeyRows& k = d.rows->second;
      if (d.user_key != nullptr) {
        auto it = k.by_user_key.find(*d.user_key);
        if (it != k.by_user_key.end() && it->second.removed) k.by_user_key.erase(it);
        if (!k.by_user_key.empty()) continue;
      }
      // The key has no entry left (a removed value, or an empty map): drop its node.
      t->rows.erase(t->rows.find(d.rows->first));
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

Status HeapKeyedStateBackend::LoadNamed(std::string_view state, std::string_view stored_key, std::string_view value,
                                        bool removed) {
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
  Rows::value_type* rows;
  const std::string* u;
  Entry* e = Find(t, key, KeyHash(key), uk, !removed, &rows, &u);
  if (removed) {
    if (e != nullptr && !e->removed) {
      e->removed = true;
      e->value.clear();
      --t->live;
    }
    return Status::OK();
  }
  if (e->removed) ++t->live;
  e->removed = false;
  e->value.assign(value.data(), value.size());
  return Status::OK();
}

}  // namespace cairn

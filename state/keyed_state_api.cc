// Encodings of the keyed-state API's byte level (state/keyed_state_api.h).
#include "state/keyed_state_api.h"

namespace cairn {

namespace {

void PutBig32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetBig32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (static_cast<uint32_t>(u[0]) << 24) | (static_cast<uint32_t>(u[1]) << 16) |
         (static_cast<uint32_t>(u[2]) << 8) | u[3];
}

}  // namespace

const char* StateKindName(StateKind k) {
  switch (k) {
    case StateKind::kValue:
      return "value";
    case StateKind::kMap:
      return "map";
    case StateKind::kList:
      return "list";
  }
  return "?";
}

std::string StateDescriptor::Encode() const { return std::string(StateKindName(kind)) + "/" + type + "/" + name; }

bool StateDescriptor::Decode(std::string_view s, StateDescriptor* out) {
  size_t a = s.find('/');
  if (a == std::string_view::npos) return false;
  size_t b = s.find('/', a + 1);
  if (b == std::string_view::npos) return false;
  std::string_view kind = s.substr(0, a);
  if (kind == "value") {
    out->kind = StateKind::kValue;
  } else if (kind == "map") {
    out->kind = StateKind::kMap;
  } else if (kind == "list") {
    out->kind = StateKind::kList;
  } else {
    return false;
  }
  out->type = std::string(s.substr(a + 1, b - a - 1));
  out->name = std::string(s.substr(b + 1));
  return !out->type.empty();
}

std::string EncodeEntryKey(StateKind kind, uint32_t key_group, std::string_view key, std::string_view user_key) {
  std::string k;
  k.reserve(2 + 4 + key.size() + user_key.size());
  k.push_back(static_cast<char>((key_group >> 8) & 0xff));
  k.push_back(static_cast<char>(key_group & 0xff));
  if (kind == StateKind::kMap) {
    PutBig32(&k, static_cast<uint32_t>(key.size()));
    k.append(key);
    k.append(user_key);
  } else {
    k.append(key);
  }
  return k;
}

bool DecodeEntryKey(StateKind kind, std::string_view stored, uint32_t* key_group, std::string_view* key,
                    std::string_view* user_key) {
  if (stored.size() < 2) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(stored.data());
  *key_group = (static_cast<uint32_t>(p[0]) << 8) | p[1];
  stored.remove_prefix(2);
  if (kind != StateKind::kMap) {
    *key = stored;
    *user_key = {};
    return true;
  }
  if (stored.size() < 4) return false;
  uint32_t n = GetBig32(stored.data());
  stored.remove_prefix(4);
  if (n > stored.size()) return false;
  *key = stored.substr(0, n);
  *user_key = stored.substr(n);
  return true;
}

void AppendListElement(std::string* list, std::string_view element) {
  PutBig32(list, static_cast<uint32_t>(element.size()));
  list->append(element);
}

bool SplitList(std::string_view list, std::vector<std::string_view>* elements) {
  elements->clear();
  while (!list.empty()) {
    if (list.size() < 4) return false;
    uint32_t n = GetBig32(list.data());
    list.remove_prefix(4);
    if (n > list.size()) return false;
    elements->push_back(list.substr(0, n));
    list.remove_prefix(n);
  }
  return true;
}

void KeyedStateBackend::AppendToList(StateId id, std::string_view key, uint64_t hash, std::string_view element) {
  std::string list;
  if (!Get(id, key, hash, {}, &list)) list.clear();
  AppendListElement(&list, element);
  Put(id, key, hash, {}, list);
}

void KeyedStateBackend::RecordForeignKey(std::string_view key, uint64_t hash) {
  if (foreign_key_error_.ok()) foreign_key_error_ = ForeignKeyError(key, hash, max_parallelism_, range_);
}

}  // namespace cairn

#include "state/operator_list_state.h"

#include "engine/base/coding.h"

namespace cairn {

namespace {

constexpr uint8_t kListStateFormat = 1;

}  // namespace

const char* ListStateModeName(ListStateMode m) { return m == ListStateMode::kSplit ? "split" : "union"; }

std::string EncodeListStates(const std::vector<ListStateBytes>& states) {
  std::string out;
  out.push_back(static_cast<char>(kListStateFormat));
  PutFixed64(&out, states.size());
  for (const ListStateBytes& s : states) {
    out.push_back(static_cast<char>(s.mode));
    PutLengthPrefixed(&out, s.type);
    PutLengthPrefixed(&out, s.name);
    PutFixed64(&out, s.items.size());
    for (const std::string& item : s.items) PutLengthPrefixed(&out, item);
  }
  return out;
}

bool DecodeListStates(std::string_view bytes, std::vector<ListStateBytes>* states) {
  Decoder d(bytes);
  uint8_t format = 0;
  uint64_t n = 0;
  // Every count is checked against the bytes left (a state takes at least 25 bytes, an item
  // 8), so a damaged count cannot make it reserve memory it does not have.
  if (!d.GetByte(&format) || format != kListStateFormat || !d.GetFixed64(&n) || n > bytes.size() / 25) return false;
  std::vector<ListStateBytes> out(n);
  for (ListStateBytes& s : out) {
    uint8_t mode = 0;
    uint64_t items = 0;
    if (!d.GetByte(&mode) || mode > 1 || !d.GetLengthPrefixed(&s.type) || !d.GetLengthPrefixed(&s.name) ||
        !d.GetFixed64(&items) || items > bytes.size() / 8)
      return false;
    s.mode = static_cast<ListStateMode>(mode);
    s.items.resize(items);
    for (std::string& item : s.items)
      if (!d.GetLengthPrefixed(&item)) return false;
  }
  if (!d.done()) return false;
  for (size_t i = 1; i < out.size(); ++i)
    if (!(out[i - 1].name < out[i].name)) return false;  // sorted, unique
  *states = std::move(out);
  return true;
}

Status RedistributeListStates(const std::string& op, uint32_t old_parallelism,
                              const std::map<uint32_t, std::string>& old, uint32_t new_parallelism,
                              const std::string& where, std::map<uint32_t, std::string>* out) {
  out->clear();
  // Decoded even when nothing moves, so that damage fails the restore before it starts.
  std::map<std::string, ListStateBytes> merged;  // by name: every old subtask's items, in order
  std::map<std::string, std::map<uint32_t, std::vector<std::string>>> own;  // by name: each old subtask's items
  bool any_union = false;
  for (const auto& [subtask, bytes] : old) {
    std::vector<ListStateBytes> states;
    if (!DecodeListStates(bytes, &states))
      return Status::Corruption(where + ": list state of operator '" + op + "' subtask " + std::to_string(subtask) +
                                " is damaged (it does not parse)");
    for (ListStateBytes& s : states) {
      auto [it, fresh] = merged.try_emplace(s.name);
      ListStateBytes& m = it->second;
      if (fresh) {
        m.mode = s.mode;
        m.type = s.type;
        m.name = s.name;
      } else if (m.mode != s.mode || m.type != s.type) {
        return Status::Corruption(where + ": list state '" + s.name + "' of operator '" + op + "' is " +
                                  ListStateModeName(m.mode) + " of " + m.type + " in one subtask but " +
                                  ListStateModeName(s.mode) + " of " + s.type + " in subtask " + std::to_string(subtask));
      }
      any_union |= s.mode == ListStateMode::kUnion;
      m.items.insert(m.items.end(), s.items.begin(), s.items.end());
      own[s.name][subtask] = std::move(s.items);
    }
  }
  const bool same = old_parallelism == new_parallelism;
  if (same && !any_union) {
    *out = old;
    return Status::OK();
  }
  if (merged.empty()) return Status::OK();
  std::vector<std::vector<ListStateBytes>> next(new_parallelism);
  for (const auto& [name, m] : merged) {
    for (std::vector<ListStateBytes>& states : next) states.push_back(ListStateBytes{m.mode, m.type, m.name, {}});
    if (m.mode == ListStateMode::kUnion) {
      for (std::vector<ListStateBytes>& states : next) states.back().items = m.items;
    } else if (same) {
      for (auto& [subtask, items] : own[name])
        if (subtask < new_parallelism) next[subtask].back().items = std::move(items);
    } else {
      for (size_t k = 0; k < m.items.size(); ++k) next[k % new_parallelism].back().items.push_back(m.items[k]);
    }
  }
  for (uint32_t i = 0; i < new_parallelism; ++i) (*out)[i] = EncodeListStates(next[i]);
  return Status::OK();
}

Status OperatorStateStore::Restore(std::string_view bytes, const std::string& where) {
  std::vector<ListStateBytes> states;
  if (!DecodeListStates(bytes, &states)) return Status::Corruption(where + ": damaged (list state does not parse)");
  states_.clear();
  where_ = where;
  for (ListStateBytes& s : states) {
    Entry& e = states_[s.name];
    e.mode = s.mode;
    e.type = std::move(s.type);
    e.restored = std::move(s.items);
  }
  return Status::OK();
}

Status OperatorStateStore::Find(const std::string& name, ListStateMode mode, const char* type, Entry** entry) {
  auto [it, fresh] = states_.try_emplace(name);
  Entry& e = it->second;
  if (fresh) {
    e.mode = mode;
    e.type = type;
  } else if (e.mode != mode || e.type != type) {
    return Status::InvalidArgument((e.typed != nullptr ? "" : where_ + ": ") + "list state '" + name + "' is " +
                                   ListStateModeName(e.mode) + " of " + e.type + ", not " + ListStateModeName(mode) +
                                   " of " + type);
  }
  *entry = &e;
  return Status::OK();
}

std::string OperatorStateStore::Snapshot() const {
  std::vector<ListStateBytes> states;
  states.reserve(states_.size());
  for (const auto& [name, e] : states_) {
    states.push_back(ListStateBytes{e.mode, e.type, name, {}});
    if (e.typed != nullptr) {
      e.typed->Encode(&states.back().items);
    } else {
      states.back().items = e.restored;
    }
  }
  return EncodeListStates(states);
}

}  // namespace cairn

#include "jobs/cli/state_dump.h"
#include "engine/dataflow/record_codec.h"

#include <cinttypes>

#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/base/file_util.h"
#include "jobs/registry.h"
#include "state/checkpoint_layout.h"
#include "state/checkpoint_store.h"
#include "state/keyed_state_api.h"
#include "state/operator_list_state.h"
#include "state/state_backend.h"

namespace cairn {

namespace {

// `bytes` as a value of Serializer type `type`: numbers and booleans as such, strings as
// text (quoted for JSON), anything else (a user type, or bytes that do not decode) as hex.
std::string FormatValue(std::string_view type, std::string_view bytes, bool json) {
  if (type == Serializer<int64_t>::kName) {
    int64_t v;
    if (Serializer<int64_t>::Read(bytes, &v)) return std::to_string(v);
  } else if (type == Serializer<double>::kName) {
    double v;
    if (Serializer<double>::Read(bytes, &v)) {
      char b[32];
      snprintf(b, sizeof b, "%.17g", v);
      return b;
    }
  } else if (type == Serializer<bool>::kName) {
    bool v;
    if (Serializer<bool>::Read(bytes, &v)) return v ? "true" : "false";
  } else if (type == Serializer<std::string>::kName) {
    return json ? JsonQuote(bytes) : std::string(bytes);
  }
  std::string hex = "0x";
  for (unsigned char c : bytes) {
    char b[3];
    snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  return json ? JsonQuote(hex) : hex;
}

// Prints one entry of a named state (the default state keeps its own lines, below).
void PrintNamed(const std::string& prefix, const StateEntry& e, bool json, FILE* out) {
  const StateDescriptor& d = *e.state;
  const std::string kind = StateKindName(d.kind);
  std::string vtype = d.type, uktype;
  if (d.kind == StateKind::kMap) {
    size_t comma = d.type.find(',');
    uktype = d.type.substr(0, comma);
    vtype = comma == std::string::npos ? "" : d.type.substr(comma + 1);
  }
  std::vector<std::string_view> elements;
  if (d.kind == StateKind::kList && !SplitList(e.value, &elements)) elements = {e.value};
  if (json) {
    std::string line = prefix + ",\"state\":" + JsonQuote(d.name) + ",\"kind\":\"" + kind + "\",\"key\":" + JsonQuote(e.key);
    if (d.kind == StateKind::kMap) line += ",\"user_key\":" + FormatValue(uktype, e.user_key, true);
    if (d.kind == StateKind::kList) {
      line += ",\"values\":[";
      for (size_t i = 0; i < elements.size(); ++i) line += (i ? "," : "") + FormatValue(vtype, elements[i], true);
      line += "]";
    } else {
      line += ",\"value\":" + FormatValue(vtype, e.value, true);
    }
    fprintf(out, "%s}\n", line.c_str());
    return;
  }
  const std::string head = prefix + "\t" + kind + "\t" + d.name + "\t" + std::string(e.key);
  if (d.kind == StateKind::kMap) {
    fprintf(out, "%s\t%s\t%s\n", head.c_str(), FormatValue(uktype, e.user_key, false).c_str(),
            FormatValue(vtype, e.value, false).c_str());
  } else if (d.kind == StateKind::kList) {
    for (std::string_view el : elements) fprintf(out, "%s\t%s\n", head.c_str(), FormatValue(vtype, el, false).c_str());
  } else {
    fprintf(out, "%s\t%s\n", head.c_str(), FormatValue(vtype, e.value, false).c_str());
  }
}

}  // namespace

std::string JsonQuote(std::string_view s) {
  std::string o;
  AppendJsonString(s, &o);
  return o;
}

Status DumpCheckpointState(const std::string& path, const std::string& op, bool json, FILE* out) {
  CompletedCheckpoint cp;
  CAIRN_RETURN_IF_ERROR(CheckpointStore::Resolve(path, &cp));
  // Either backend reads every checkpoint (they share the format).
  const std::unique_ptr<StateBackend> backend = NewStateBackend(StateBackendOptions{});
  bool found = op.empty();
  for (const SubtaskStateHandle& h : cp.metadata.subtasks) {
    if (!op.empty() && h.operator_id != op) continue;
    found = true;
    const std::string prefix = json ? "{\"operator\":" + JsonQuote(h.operator_id) + ",\"subtask\":" + std::to_string(h.subtask)
                                    : h.operator_id + "\t" + std::to_string(h.subtask);
    if (!h.keyed_dir.empty()) {
      Status s = backend->ReadStates(InCheckpoint(cp.path, h.keyed_dir), [&](const StateEntry& e) {
        if (e.state->name != kDefaultStateName) return PrintNamed(prefix, e, json, out);
        std::string_view key = e.key;
        int64_t value = 0;
        if (!Serializer<int64_t>::Read(e.value, &value)) value = 0;  // ReadStates checked its size
        if (json) {
          fprintf(out, "%s,\"key\":%s,\"value\":%" PRId64 "}\n", prefix.c_str(), JsonQuote(key).c_str(), value);
        } else {
          fprintf(out, "%s\tkey\t%.*s\t%" PRId64 "\n", prefix.c_str(), static_cast<int>(key.size()), key.data(), value);
        }
      });
      CAIRN_RETURN_IF_ERROR(s);
    }
    std::string bytes;
    CAIRN_RETURN_IF_ERROR(ReadSubtaskState(cp.path, h.operator_state_file, h.operator_state_inline, &bytes));
    if (!bytes.empty()) {
      // Operator (non-keyed) state: source positions, a sink's pending files, ... decoded by
      // the operator's type (recorded in the checkpoint) where it has a describe_state; its
      // bytes, with their length, otherwise.
      const std::string hex = FormatValue("", bytes, false);
      const OperatorType* type = h.operator_type.empty() ? nullptr : FindOperatorType(h.operator_type);
      std::string decoded;
      const bool has_text = type != nullptr && type->describe_state && type->describe_state(bytes, &decoded);
      if (json) {
        fprintf(out, "%s,\"operator_state_bytes\":%zu,\"operator_state\":%s%s}\n", prefix.c_str(), bytes.size(),
                JsonQuote(hex).c_str(), has_text ? (",\"decoded\":" + JsonQuote(decoded)).c_str() : "");
      } else {
        fprintf(out, "%s\toperator_state\t%zu bytes\t%s\n", prefix.c_str(), bytes.size(),
                has_text ? decoded.c_str() : hex.c_str());
      }
    }
    CAIRN_RETURN_IF_ERROR(ReadSubtaskState(cp.path, h.list_state_file, h.list_state_inline, &bytes));
    if (!bytes.empty()) {
      std::vector<ListStateBytes> states;
      if (!DecodeListStates(bytes, &states))
        return Status::Corruption(SubtaskStateDamaged(cp.path, h, h.list_state_file, "list state", "does not parse"));
      for (const ListStateBytes& ls : states) {
        const char* mode = ListStateModeName(ls.mode);
        if (json) {
          std::string line = prefix + ",\"list_state\":" + JsonQuote(ls.name) + ",\"mode\":\"" + mode + "\",\"values\":[";
          for (size_t i = 0; i < ls.items.size(); ++i) line += (i ? "," : "") + FormatValue(ls.type, ls.items[i], true);
          fprintf(out, "%s]}\n", line.c_str());
        } else {
          for (const std::string& item : ls.items)
            fprintf(out, "%s\tlist_state\t%s\t%s\t%s\n", prefix.c_str(), ls.name.c_str(), mode,
                    FormatValue(ls.type, item, false).c_str());
        }
      }
    }
    CAIRN_RETURN_IF_ERROR(ReadSubtaskState(cp.path, h.channel_state_file, h.channel_state_inline, &bytes));
    if (!bytes.empty()) {
      std::vector<RestoredChannel> channels;
      if (!DecodeChannelState(bytes, &channels))
        return Status::Corruption(
            SubtaskStateDamaged(cp.path, h, h.channel_state_file, "channel state records", "do not parse"));
      for (const RestoredChannel& c : channels) {
        const Schema& sc = *c.schema;
        std::string rec;
        for (size_t i = 0; i < c.records.size(); ++i) {
          rec.clear();
          if (json) {
            AppendJsonObject(c.records, i, &rec);
            fprintf(out, "%s,\"channel\":%s,\"record\":%s}\n", prefix.c_str(), JsonQuote(c.name).c_str(), rec.c_str());
          } else {
            for (size_t f = 0; f < sc.size(); ++f) {
              if (f > 0) rec += ' ';
              rec += sc.field(f).name + "=";
              if (c.records.IsNull(i, f)) {
                rec += "null";
              } else {
                AppendText(c.records, i, f, &rec);
              }
            }
            fprintf(out, "%s\tchannel\t%s\t%s\n", prefix.c_str(), c.name.c_str(), rec.c_str());
          }
        }
      }
    }
  }
  if (!found) return Status::InvalidArgument("checkpoint " + cp.path + " has no state for operator '" + op + "'");
  return Status::OK();
}

}  // namespace cairn

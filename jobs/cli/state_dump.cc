#include "jobs/cli/state_dump.h"
#include "engine/dataflow/record_codec.h"

#include <cinttypes>

#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/base/file_util.h"
#include "state/checkpoint_layout.h"
#include "state/checkpoint_store.h"
#include "state/state_backend.h"

namespace cairn {

std::string JsonQuote(std::string_view s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

Status DumpCheckpointState(const std::string& path, const std::string& op, bool json, FILE* out) {
  CompletedCheckpoint cp;
  CAIRN_RETURN_IF_ERROR(CheckpointStore::Resolve(path, &cp));
  const std::unique_ptr<StateBackend> backend = NewRocksDbStateBackend();
  bool found = op.empty();
  for (const SubtaskStateHandle& h : cp.metadata.subtasks) {
    if (!op.empty() && h.operator_id != op) continue;
    found = true;
    const std::string prefix = json ? "{\"operator\":" + JsonQuote(h.operator_id) + ",\"subtask\":" + std::to_string(h.subtask)
                                    : h.operator_id + "\t" + std::to_string(h.subtask);
    if (!h.keyed_dir.empty()) {
      Status s = backend->ReadSnapshot(InCheckpoint(cp.path, h.keyed_dir), [&](uint32_t, std::string_view key, int64_t value) {
        if (json) {
          fprintf(out, "%s,\"key\":%s,\"value\":%" PRId64 "}\n", prefix.c_str(), JsonQuote(key).c_str(), value);
        } else {
          fprintf(out, "%s\tkey\t%.*s\t%" PRId64 "\n", prefix.c_str(), static_cast<int>(key.size()), key.data(), value);
        }
      });
      CAIRN_RETURN_IF_ERROR(s);
    }
    if (!h.channel_state_file.empty()) {
      std::string file = InCheckpoint(cp.path, h.channel_state_file);
      std::string bytes;
      CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(file, &bytes));
      std::vector<RestoredChannel> channels;
      if (!DecodeChannelState(bytes, &channels)) return Status::Corruption(file + ": damaged (channel state records do not parse)");
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

#include "state/checkpoint_metadata.h"

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/file_util.h"
#include "state/checkpoint_format.h"
#include "state/checkpoint_layout.h"

namespace cairn {

namespace {

// ---- Strings: percent-encoding, so that a value never contains ' ', '=', '\n' or '%' ----
//
// Bytes in [A-Za-z0-9._/-] are written as they are, every other byte as %XX (upper-case hex).
// The empty string is written "-", and the one-byte string "-" as "%2D".

bool IsPlain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '/' || c == '-';
}

std::string Escape(std::string_view s) {
  if (s.empty()) return "-";
  if (s == "-") return "%2D";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (IsPlain(c)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool Unescape(std::string_view s, std::string* out) {
  out->clear();
  if (s.empty()) return false;
  if (s == "-") return true;
  for (size_t i = 0; i < s.size(); i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (IsPlain(c)) {
      *out += s[i];
      continue;
    }
    if (c != '%' || s.size() - i < 3) return false;
    int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return true;
}

// ---- Numbers: plain decimal, no sign on unsigned values, no spaces ----

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t r = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (r > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    r = r * 10 + d;
  }
  *v = r;
  return true;
}

bool ParseU32(std::string_view s, uint32_t* v) {
  uint64_t r;
  if (!ParseU64(s, &r) || r > std::numeric_limits<uint32_t>::max()) return false;
  *v = static_cast<uint32_t>(r);
  return true;
}

bool ParseI64(std::string_view s, int64_t* v) {
  bool negative = !s.empty() && s[0] == '-';
  uint64_t r;
  if (!ParseU64(negative ? s.substr(1) : s, &r)) return false;
  if (negative) {
    if (r > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) return false;
    *v = static_cast<int64_t>(0 - r);
  } else {
    if (r > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *v = static_cast<int64_t>(r);
  }
  return true;
}

// A relative path below the checkpoint directory ("" allowed): no leading '/', no ".." part.
bool IsContainedRelativePath(const std::string& p) {
  if (p.empty()) return true;
  if (p[0] == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

std::string Quote(std::string_view s) {
  // For error messages: at most 40 bytes of the offending text, non-printable bytes escaped.
  std::string out = "\"";
  size_t n = 0;
  for (char ch : s) {
    if (++n > 40) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += '"';
  return out;
}

// ---- The decoder ----

class MetadataParser {
 public:
  MetadataParser(const std::string& path, CheckpointMetadata* m) : path_(path), m_(m) {}

  Status Damaged(const std::string& reason) const {
    return Status::Corruption(path_ + ": damaged (" + reason + ")");
  }
  Status LineError(const std::string& reason) const {
    return Damaged("line " + std::to_string(line_no_) + ": " + reason);
  }

  // Parses one line of the body (between the header and the checksum line).
  Status ParseLine(size_t line_no, std::string_view line) {
    line_no_ = line_no;
    if (line.empty()) return LineError("empty line");
    size_t space = line.find(' ');
    std::string_view key = line.substr(0, space);
    std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    if (key == "subtask") return ParseSubtask(rest);
    if (space == std::string_view::npos) return LineError("field " + Quote(key) + " has no value");
    if (rest.find(' ') != std::string_view::npos) return LineError("field " + Quote(key) + " has more than one value");
    return ParseScalar(key, rest);
  }

  Status Finish() {
    static constexpr const char* kRequired[] = {
        "id",        "job",         "trigger_time_ms",     "duration_ms",  "mode",    "max_parallelism",
        "state_bytes", "channel_state_bytes", "alignment_ms", "sync_ms",  "async_ms", "sources_finished"};
    for (const char* k : kRequired) {
      if (seen_.count(k) == 0) return Damaged("missing field " + std::string(k));
    }
    for (size_t i = 0; i < m_->subtasks.size(); i++) {
      const SubtaskStateHandle& h = m_->subtasks[i];
      line_no_ = subtask_lines_[i];
      if (h.key_groups.first <= h.key_groups.last && h.key_groups.last >= m_->max_parallelism) {
        return LineError("key group range " + h.key_groups.ToString() + " exceeds max_parallelism " +
                         std::to_string(m_->max_parallelism));
      }
    }
    return Status::OK();
  }

 private:
  Status ParseScalar(std::string_view key, std::string_view value) {
    if (!seen_.insert(std::string(key)).second) return LineError("duplicate field " + Quote(key));
    if (key == "id") return Unsigned(key, value, &m_->id);
    if (key == "job") return String(key, value, &m_->job_name);
    if (key == "trigger_time_ms") return Signed(key, value, &m_->trigger_time_ms);
    if (key == "duration_ms") return Signed(key, value, &m_->duration_ms);
    if (key == "mode") return String(key, value, &m_->mode);
    if (key == "max_parallelism") {
      CAIRN_RETURN_IF_ERROR(Unsigned32(key, value, &m_->max_parallelism));
      if (m_->max_parallelism == 0) return LineError("max_parallelism must be at least 1");
      return Status::OK();
    }
    if (key == "state_bytes") return Unsigned(key, value, &m_->state_bytes);
    if (key == "channel_state_bytes") return Unsigned(key, value, &m_->channel_state_bytes);
    if (key == "alignment_ms") return Signed(key, value, &m_->alignment_ms);
    if (key == "sync_ms") return Signed(key, value, &m_->sync_ms);
    if (key == "async_ms") return Signed(key, value, &m_->async_ms);
    if (key == "sources_finished") {
      if (value != "0" && value != "1") return LineError("sources_finished must be 0 or 1, not " + Quote(value));
      m_->sources_finished = value == "1";
      return Status::OK();
    }
    if (key == "kind") {
      if (value != "checkpoint" && value != "savepoint")
        return LineError("kind must be checkpoint or savepoint, not " + Quote(value));
      m_->kind = std::string(value);
      return Status::OK();
    }
    return LineError("unknown field " + Quote(key));
  }

  Status ParseSubtask(std::string_view rest) {
    SubtaskStateHandle h;
    std::set<std::string, std::less<>> seen;
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      std::string_view token = rest.substr(0, space);
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      if (token.empty()) return LineError("subtask: empty attribute");
      if (space != std::string_view::npos && rest.empty()) return LineError("subtask: trailing space");
      size_t eq = token.find('=');
      if (eq == std::string_view::npos) return LineError("subtask: attribute " + Quote(token) + " has no '='");
      std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
      if (!seen.insert(std::string(key)).second) return LineError("subtask: duplicate attribute " + Quote(key));
      CAIRN_RETURN_IF_ERROR(ParseSubtaskAttribute(key, value, &h));
    }
    static constexpr const char* kRequired[] = {"op",          "index",          "parallelism", "key_groups",
                                                "keyed",       "operator_state", "channel_state", "state_bytes", "channel_state_bytes",
                                                "alignment_ms", "sync_ms",       "async_ms"};
    for (const char* k : kRequired) {
      if (seen.count(k) == 0) return LineError("subtask: missing attribute " + std::string(k));
    }
    const struct {
      const char* name;
      const std::string& file;
      const std::string& in_line;
    } kinds[] = {{"operator_state", h.operator_state_file, h.operator_state_inline},
                 {"list_state", h.list_state_file, h.list_state_inline},
                 {"channel_state", h.channel_state_file, h.channel_state_inline}};
    for (const auto& k : kinds) {
      if (!k.file.empty() && !k.in_line.empty())
        return LineError("subtask: both " + std::string(k.name) + " and " + k.name + "_inline are set");
    }
    if (h.parallelism == 0) return LineError("subtask: parallelism must be at least 1");
    if (h.subtask >= h.parallelism) {
      return LineError("subtask: index " + std::to_string(h.subtask) + " is not below parallelism " +
                       std::to_string(h.parallelism));
    }
    auto [it, inserted] = parallelism_.emplace(h.operator_id, h.parallelism);
    if (!inserted && it->second != h.parallelism) {
      return LineError("subtask: operator " + Quote(h.operator_id) + " has parallelism " + std::to_string(h.parallelism) +
                       " here but " + std::to_string(it->second) + " on an earlier line");
    }
    if (!subtask_ids_.emplace(h.operator_id, h.subtask).second) {
      return LineError("subtask: duplicate state for operator " + Quote(h.operator_id) + " index " +
                       std::to_string(h.subtask));
    }
    m_->subtasks.push_back(std::move(h));
    subtask_lines_.push_back(line_no_);
    return Status::OK();
  }

  Status ParseSubtaskAttribute(std::string_view key, std::string_view value, SubtaskStateHandle* h) {
    if (key == "op") {
      CAIRN_RETURN_IF_ERROR(String(key, value, &h->operator_id));
      if (h->operator_id.empty()) return LineError("subtask: empty operator id");
      return Status::OK();
    }
    if (key == "type") return String(key, value, &h->operator_type);  // optional
    if (key == "index") return Unsigned32(key, value, &h->subtask);
    if (key == "parallelism") return Unsigned32(key, value, &h->parallelism);
    if (key == "key_groups") {
      size_t dash = value.find('-');
      if (dash == std::string_view::npos || !ParseU32(value.substr(0, dash), &h->key_groups.first) ||
          !ParseU32(value.substr(dash + 1), &h->key_groups.last)) {
        return LineError("subtask: key_groups must be <first>-<last>, not " + Quote(value));
      }
      return Status::OK();
    }
    if (key == "keyed" || key == "operator_state" || key == "channel_state" || key == "list_state") {
      std::string* dest = key == "keyed"            ? &h->keyed_dir
                          : key == "operator_state" ? &h->operator_state_file
                          : key == "list_state"     ? &h->list_state_file  // optional
                                                    : &h->channel_state_file;
      CAIRN_RETURN_IF_ERROR(String(key, value, dest));
      if (!IsContainedRelativePath(*dest)) {
        return LineError("subtask: " + std::string(key) + " path " + Quote(*dest) +
                         " is not inside the checkpoint directory");
      }
      return Status::OK();
    }
    if (key == "operator_state_inline" || key == "list_state_inline" || key == "channel_state_inline") {  // optional
      std::string* dest = key == "operator_state_inline" ? &h->operator_state_inline
                          : key == "list_state_inline"   ? &h->list_state_inline
                                                         : &h->channel_state_inline;
      CAIRN_RETURN_IF_ERROR(String(key, value, dest));
      if (dest->empty()) return LineError("subtask: " + std::string(key) + " is empty");
      return Status::OK();
    }
    if (key == "state_bytes") return Unsigned(key, value, &h->state_bytes);
    if (key == "channel_state_bytes") return Unsigned(key, value, &h->channel_state_bytes);
    if (key == "alignment_ms") return Signed(key, value, &h->alignment_ms);
    if (key == "sync_ms") return Signed(key, value, &h->sync_ms);
    if (key == "async_ms") return Signed(key, value, &h->async_ms);
    if (key == "records_skipped") {  // optional
      CAIRN_RETURN_IF_ERROR(Signed(key, value, &h->records_skipped));
      if (h->records_skipped < 0) return LineError("subtask: records_skipped must not be negative");
      return Status::OK();
    }
    if (key == "records_late") {  // optional
      CAIRN_RETURN_IF_ERROR(Signed(key, value, &h->records_late));
      if (h->records_late < 0) return LineError("subtask: records_late must not be negative");
      return Status::OK();
    }
    return LineError("subtask: unknown attribute " + Quote(key));
  }

  Status Unsigned(std::string_view key, std::string_view value, uint64_t* out) {
    if (!ParseU64(value, out)) return LineError(std::string(key) + " is not an unsigned 64-bit number: " + Quote(value));
    return Status::OK();
  }
  Status Unsigned32(std::string_view key, std::string_view value, uint32_t* out) {
    if (!ParseU32(value, out)) return LineError(std::string(key) + " is not an unsigned 32-bit number: " + Quote(value));
    return Status::OK();
  }
  Status Signed(std::string_view key, std::string_view value, int64_t* out) {
    if (!ParseI64(value, out)) return LineError(std::string(key) + " is not a signed 64-bit number: " + Quote(value));
    return Status::OK();
  }
  Status String(std::string_view key, std::string_view value, std::string* out) {
    if (!Unescape(value, out)) return LineError(std::string(key) + " is not a well-formed escaped string: " + Quote(value));
    return Status::OK();
  }

  const std::string& path_;
  CheckpointMetadata* m_;
  size_t line_no_ = 0;
  std::set<std::string, std::less<>> seen_;
  std::set<std::pair<std::string, uint32_t>> subtask_ids_;
  std::map<std::string, uint32_t, std::less<>> parallelism_;
  std::vector<size_t> subtask_lines_;
};

constexpr std::string_view kCrcPrefix = "crc32c ";
constexpr size_t kCrcHexDigits = 8;

}  // namespace

std::string EncodeMetadata(const CheckpointMetadata& m) {
  std::string out;
  out += kMetadataMagic;
  out += ' ';
  out += std::to_string(kMetadataFormatVersion);
  out += '\n';
  auto field = [&out](const char* key, const std::string& value) {
    out += key;
    out += ' ';
    out += value;
    out += '\n';
  };
  field("id", std::to_string(m.id));
  field("job", Escape(m.job_name));
  field("trigger_time_ms", std::to_string(m.trigger_time_ms));
  field("duration_ms", std::to_string(m.duration_ms));
  field("mode", Escape(m.mode));
  field("max_parallelism", std::to_string(m.max_parallelism));
  field("state_bytes", std::to_string(m.state_bytes));
  field("channel_state_bytes", std::to_string(m.channel_state_bytes));
  field("alignment_ms", std::to_string(m.alignment_ms));
  field("sync_ms", std::to_string(m.sync_ms));
  field("async_ms", std::to_string(m.async_ms));
  field("sources_finished", m.sources_finished ? "1" : "0");
  if (m.kind != "checkpoint") field("kind", m.kind);
  for (const SubtaskStateHandle& h : m.subtasks) {
    out += "subtask op=" + Escape(h.operator_id);
    out += " index=" + std::to_string(h.subtask);
    out += " parallelism=" + std::to_string(h.parallelism);
    out += " key_groups=" + h.key_groups.ToString();
    out += " keyed=" + Escape(h.keyed_dir);
    out += " operator_state=" + Escape(h.operator_state_file);
    out += " channel_state=" + Escape(h.channel_state_file);
    out += " state_bytes=" + std::to_string(h.state_bytes);
    out += " channel_state_bytes=" + std::to_string(h.channel_state_bytes);
    out += " alignment_ms=" + std::to_string(h.alignment_ms);
    out += " sync_ms=" + std::to_string(h.sync_ms);
    out += " async_ms=" + std::to_string(h.async_ms);
    if (h.records_skipped >= 0) out += " records_skipped=" + std::to_string(h.records_skipped);
    if (h.records_late >= 0) out += " records_late=" + std::to_string(h.records_late);
    if (!h.list_state_file.empty()) out += " list_state=" + Escape(h.list_state_file);
    if (!h.operator_state_inline.empty()) out += " operator_state_inline=" + Escape(h.operator_state_inline);
    if (!h.list_state_inline.empty()) out += " list_state_inline=" + Escape(h.list_state_inline);
    if (!h.channel_state_inline.empty()) out += " channel_state_inline=" + Escape(h.channel_state_inline);
    if (!h.operator_type.empty()) out += " type=" + Escape(h.operator_type);
    out += '\n';
  }
  char crc[32];
  std::snprintf(crc, sizeof crc, "%08" PRIx32, Crc32c(out));
  out += kCrcPrefix;
  out += crc;
  out += '\n';
  return out;
}

Status DecodeMetadata(const std::string& path, const std::string& bytes, CheckpointMetadata* m) {
  auto damaged = [&path](const std::string& reason) {
    return Status::Corruption(path + ": damaged (" + reason + ")");
  };
  const std::string_view all(bytes);

  // 1. The magic: is this a Cairn checkpoint metadata file at all?
  const std::string magic = std::string(kMetadataMagic) + " ";
  if (all.empty()) return damaged("empty file");
  if (all.size() < magic.size() && magic.compare(0, all.size(), all) == 0) return damaged("truncated");
  if (all.compare(0, magic.size(), magic) != 0) {
    return Status::Corruption(path + ": not a Cairn checkpoint metadata file");
  }

  // 2. The format version, checked before anything else so that a newer format is reported as
  // such even when its layout differs.
  size_t header_end = all.find('\n');
  if (header_end == std::string_view::npos) return damaged("truncated");
  std::string_view version_text = all.substr(magic.size(), header_end - magic.size());
  uint64_t version;
  if (!ParseU64(version_text, &version)) return damaged("line 1: format version is not a number: " + Quote(version_text));
  if (version != kMetadataFormatVersion) {
    return Status::Corruption(path + ": incompatible format version " + std::to_string(version) +
                              " (this build reads version " + std::to_string(kMetadataFormatVersion) + ")");
  }

  // 3. The checksum line, covering every byte before it.
  if (all.back() != '\n') return damaged("truncated");
  size_t crc_line_start = all.rfind('\n', all.size() - 2) + 1;  // header_end < size-1 here or the line is the header
  if (crc_line_start <= header_end) return damaged("truncated: no checksum line");
  std::string_view crc_line = all.substr(crc_line_start, all.size() - 1 - crc_line_start);
  if (crc_line.substr(0, kCrcPrefix.size()) != kCrcPrefix) return damaged("truncated: no checksum line");
  std::string_view crc_hex = crc_line.substr(kCrcPrefix.size());
  if (crc_hex.size() != kCrcHexDigits) return damaged("malformed checksum line");
  uint32_t stored_crc = 0;
  for (char c : crc_hex) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return damaged("malformed checksum line");
    stored_crc = stored_crc << 4 | static_cast<uint32_t>(v);
  }
  if (Crc32c(all.substr(0, crc_line_start)) != stored_crc) return damaged("checksum mismatch");

  // 4. The fields, strictly.
  CheckpointMetadata result;
  MetadataParser parser(path, &result);
  size_t line_no = 2;
  for (size_t pos = header_end + 1; pos < crc_line_start; line_no++) {
    size_t end = all.find('\n', pos);  // never npos: the checksum line follows
    CAIRN_RETURN_IF_ERROR(parser.ParseLine(line_no, all.substr(pos, end - pos)));
    pos = end + 1;
  }
  CAIRN_RETURN_IF_ERROR(parser.Finish());
  *m = std::move(result);
  return Status::OK();
}

Status WriteMetadata(const std::string& chk_dir, const CheckpointMetadata& m) {
  AtomicWriteCrashPoints crash_points;
  crash_points.tmp_written = "metadata.tmp_written";
  crash_points.renamed = "metadata.renamed";
  CAIRN_RETURN_IF_ERROR(WriteFileAtomically(MetadataPath(chk_dir), EncodeMetadata(m), crash_points));
  // Make the chk-<id> entry itself durable in the checkpoint directory.
  std::string dir = chk_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  size_t slash = dir.find_last_of('/');
  std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  return FsyncDir(parent);
}

Status ReadMetadata(const std::string& chk_dir, CheckpointMetadata* m) {
  const std::string path = MetadataPath(chk_dir);
  std::string bytes;
  Status s = ReadFile(path, &bytes);
  if (s.IsNotFound()) return Status::NotFound(path + ": no such file");
  CAIRN_RETURN_IF_ERROR(s);
  return DecodeMetadata(path, bytes, m);
}

std::string EscapeMetadataString(std::string_view s) { return Escape(s); }
bool UnescapeMetadataString(std::string_view s, std::string* out) { return Unescape(s, out); }

Status ReadSubtaskState(const std::string& chk_dir, const std::string& file, const std::string& in_line,
                        std::string* out) {
  if (file.empty()) {
    *out = in_line;
    return Status::OK();
  }
  return ReadChecksummedFile(InCheckpoint(chk_dir, file), out);
}

std::string SubtaskStatePath(const std::string& chk_dir, const std::string& file) {
  return file.empty() ? MetadataPath(chk_dir) : InCheckpoint(chk_dir, file);
}

std::string SubtaskStateDamaged(const std::string& chk_dir, const SubtaskStateHandle& h, const std::string& file,
                                std::string_view what, std::string_view fails) {
  std::string out = SubtaskStatePath(chk_dir, file) + ": damaged (";
  out += what;
  if (file.empty()) out += " of " + SubtaskStateRelPath(h.operator_id, h.subtask);
  out += ' ';
  out += fails;
  out += ')';
  return out;
}

}  // namespace cairn

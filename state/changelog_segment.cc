// Changelog segments: encoding and reading.
#include "state/changelog_segment.h"

#include <cstdio>

#include "engine/base/coding.h"
#include "engine/base/file_util.h"

namespace cairn {

namespace {
constexpr std::string_view kMagic = "CLG1";
}

std::string ChangelogSegmentName(uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%012llu", kChangelogSegmentPrefix, static_cast<unsigned long long>(seq));
  return buf;
}

bool IsChangelogSegmentName(std::string_view name) { return name.rfind(kChangelogSegmentPrefix, 0) == 0; }

std::string EncodeChangelogSegment(const StateDelta& delta) {
  std::string out;
  out.reserve(kMagic.size() + delta.keys.size() + delta.entries.size() * 26);
  out.append(kMagic);
  for (const StateDelta::Entry& e : delta.entries) {
    out.push_back(0);
    PutFixed64(&out, e.key_group);
    PutLengthPrefixed(&out, delta.key(e));
    PutFixed64(&out, static_cast<uint64_t>(e.value));
    out.push_back(e.deleted ? 1 : 0);
  }
  for (const StateDelta::NamedEntry& e : delta.named) {
    out.push_back(1);
    PutLengthPrefixed(&out, e.state);
    PutLengthPrefixed(&out, e.key);
    PutLengthPrefixed(&out, e.deleted ? std::string_view() : std::string_view(e.value));
    out.push_back(e.deleted ? 1 : 0);
  }
  return out;
}

Status ReadChangelogSegment(const std::string& path, const std::function<Status(const ChangelogEntry&)>& fn) {
  std::string bytes;
  CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(path, &bytes));
  std::string_view in(bytes);
  if (in.substr(0, kMagic.size()) != kMagic)
    return Status::Corruption("changelog segment " + path + ": damaged (no CLG1 header)");
  Decoder d(in.substr(kMagic.size()));
  while (!d.done()) {
    ChangelogEntry e;
    uint8_t kind = 0, deleted = 0;
    bool ok = d.GetByte(&kind);
    if (ok && kind == 0) {
      uint64_t kg = 0, v = 0;
      ok = d.GetFixed64(&kg) && kg < 65536 && d.GetLengthPrefixedView(&e.key) && d.GetFixed64(&v);
      e.key_group = static_cast<uint32_t>(kg);
      e.int64 = static_cast<int64_t>(v);
    } else if (ok && kind == 1) {
      ok = d.GetLengthPrefixedView(&e.state) && !e.state.empty() && d.GetLengthPrefixedView(&e.key) &&
           d.GetLengthPrefixedView(&e.value);
    } else {
      ok = false;
    }
    ok = ok && d.GetByte(&deleted) && deleted <= 1;
    if (!ok) return Status::Corruption("changelog segment " + path + ": damaged (malformed entry)");
    e.deleted = deleted == 1;
    CAIRN_RETURN_IF_ERROR(fn(e));
  }
  return Status::OK();
}

}  // namespace cairn

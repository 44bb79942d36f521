// Changelog segments of the heap backend's changelog checkpoints (`state.changelog: true`,
// docs/state.md): one checkpoint's keyed delta (StateDelta), written sequentially as one
// checksummed blob (WriteChecksummedFile: one write, one fsync) instead of into RocksDB. A
// keyed snapshot then is the last materialization of the subtask's RocksDB plus the segments
// written since, in order; a reader applies them to the materialization (a later segment's
// entry replaces an earlier one's, a deleted entry removes the key).
//
// Bytes (inside the blob): "CLG2", then one entry after another, each a kind byte and
// (varint: LEB128; bytes: a varint length, then the bytes)
//   0 put / 1 delete, default state: varint key group, bytes key, varint value (zigzag; put only)
//   2 put / 3 delete, named state: bytes state (StateDescriptor::Encode), bytes stored key
//          (EncodeEntryKey), bytes value (put only)
//   4 table, first or not at all: varint 1 when the entries are listed in the table's slot
//          order (else 0), varint the table's salt, varint its key count, varint the segment's
//          entry count (SegmentTable). A hint for a restore's loading; readers skip it.
// A segment is referenced from a keyed snapshot's SHARED list (state/shared_files.h) under a
// name starting with kChangelogSegmentPrefix, so shared-file collection keeps it exactly as
// long as a checkpoint lists it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "state/keyed_state.h"

namespace cairn {

// "changelog." + a zero-padded sequence number: names sort in write order.
inline constexpr const char* kChangelogSegmentPrefix = "changelog.";
std::string ChangelogSegmentName(uint64_t seq);
bool IsChangelogSegmentName(std::string_view name);

// The segment bytes of `delta` (without the blob footer).
std::string EncodeChangelogSegment(const StateDelta& delta);
// The same bytes written into `*buffer`, which is grown when too small and never shrunk nor
// zero-filled again: a caller that keeps it from one checkpoint to the next encodes into pages
// it already has. The result views the start of `*buffer` (valid until it next changes).
std::string_view EncodeChangelogSegment(const StateDelta& delta, std::string* buffer);

// One entry of a segment. `state` empty: the default state (`key` the key, `int64` its value);
// else a named state (`key` the stored key, `value` the stored bytes).
struct ChangelogEntry {  // 64 bytes: a coalescing holds one per distinct key
  std::string_view state;
  std::string_view key;
  std::string_view value;
  int64_t int64 = 0;
  uint32_t key_group = 0;
  bool deleted = false;
};

// Reads the segment file `path` (checksummed) into *bytes and visits its entries in order (the
// entries' views point into *bytes). Damage is Corruption naming `path`.
Status ReadChangelogSegment(const std::string& path, std::string* bytes,
                            const std::function<Status(const ChangelogEntry&)>& fn);
// The same over the segment bytes `in` already read (and checked) from `path`.
Status ParseChangelogSegment(const std::string& path, std::string_view in,
                             const std::function<Status(const ChangelogEntry&)>& fn);

// The entries of segment bytes `in` read (and checked) from `path`, one at a time: what
// ParseChangelogSegment visits, for a reader that interleaves several segments. `in` must
// outlive the reader and the entries it gives, and `path` the reader.
class ChangelogSegmentReader {
 public:
  ChangelogSegmentReader(const std::string& path, std::string_view in);
  // The next entry into *e (its views point into `in`); false at the end, or on damage, which
  // status() then names (Corruption naming the path).
  bool Next(ChangelogEntry* e);
  const Status& status() const { return status_; }

 private:
  bool Fail(const std::string& what);

  const std::string& path_;
  std::string_view in_;
  Status status_;
};

// Written for a delta a table took (StateDelta::table_keys set): that table's salt and key
// count, whether the entries come in its slot order (StateDelta::slot_order), and the
// segment's entry count. A restore that loads a segment in slot order into a table with the
// same salt sweeps the table in order instead of probing it at random
// (KeyedInt64State::AdoptSlotOrder).
struct SegmentTable {
  uint64_t salt = 0;
  uint64_t table_keys = 0;
  uint64_t entries = 0;
  bool slot_order = false;
};
// The table entry of the segment bytes `bytes` (read and checked), if it has one.
std::optional<SegmentTable> ChangelogSegmentTable(std::string_view bytes);

// The entries of the segments `paths` (in write order) coalesced: the newest entry of each
// (state, key group, key) only, sorted by state and then by stored key order (key group, then
// key bytes), so that writing them into RocksDB inserts in key order. *buffers holds the
// segments' bytes the entries point into.
// With `stop`, gives up (Aborted) once it is set, between segments.
Status CoalesceChangelogSegments(const std::vector<std::string>& paths, std::vector<std::string>* buffers,
                                 std::vector<ChangelogEntry>* out, const std::atomic<bool>* stop = nullptr);

}  // namespace cairn

// RocksDbStateStore: persists keyed-state deltas into a per-subtask RocksDB and takes RocksDB
// checkpoints of it; restores from one snapshot by hard links, or from several by rewriting.
#include "state/rocksdb_state_store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/metadata.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <system_error>
#include <utility>

#include "engine/base/crash_points.h"
#include "engine/base/file_util.h"
#include "state/changelog_segment.h"
#include "state/checkpoint_format.h"
#include "state/heap_keyed_state.h"
#include "state/shared_files.h"

namespace cairn {

namespace fs = std::filesystem;

namespace {

constexpr size_t kKeyGroupPrefixSize = 2;
constexpr size_t kValueSize = 8;
constexpr size_t kRestoreBatchEntries = 64 * 1024;
// Reads ahead of sequential scans of a snapshot's SST files (pre-flight and restore).
constexpr size_t kScanReadahead = 2 << 20;
// The largest segment buffer a persister thread keeps for the next checkpoint's segment; one
// of a larger delta (a whole large state's, as a final checkpoint's) is freed once written.
constexpr size_t kKeptSegmentBuffer = 64 << 20;

// An info logger that drops everything, given to read-only opens so that no LOG file can
// ever be written into a snapshot directory.
class DiscardingLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

Status FromRocks(const rocksdb::Status& s, std::string_view what, const std::string& dir) {
  std::string msg = std::string(what) + " " + dir + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  return Status::IOError(std::move(msg));
}

Status FromErrorCode(std::string_view what, const std::string& path, const std::error_code& ec) {
  return Status::IOError(std::string(what) + " " + path + ": " + ec.message());
}

rocksdb::Options WorkDbOptions(const StateBackendOptions& opts) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.compression = rocksdb::kNoCompression;
  o.max_background_jobs = 2;
  o.write_buffer_size = opts.write_buffer;
  o.max_write_buffer_number = 2;
  // Levels sized from the last one down, which then holds most of the data: a table file
  // ingested over the whole key range (a delta, or a materialization) goes to level 0 and is
  // compacted into the last level. With static sizes each such file went one level above the
  // last and stayed there, below its level's target size: up to six stale copies of the
  // state, all read by a restore (docs/benchmarks.md, twenty-third round).
  o.level_compaction_dynamic_level_bytes = true;
  o.max_manifest_file_size = 4 << 20;  // a checkpoint copies the MANIFEST: keep it small
  o.keep_log_file_num = 2;
  o.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // Reads go through one LRU block cache of state.rocksdb.block_cache bytes, index and filter
  // blocks included, so that the memory the database holds is bounded (docs/state.md).
  rocksdb::BlockBasedTableOptions t;
  // Few shards, so that a shard (the cache is split evenly among them) still holds many
  // blocks: at least 4 MiB each, at most 64 shards.
  int shard_bits = 0;
  while (shard_bits < 6 && (opts.block_cache >> (shard_bits + 1)) >= (4u << 20)) ++shard_bits;
  t.block_cache = rocksdb::NewLRUCache(opts.block_cache, shard_bits);
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = false;
  // The first read of every new key misses: a Bloom filter answers it without reading blocks.
  // Index and filter are partitioned (blocks of ~4 KiB), so that a read loads the small pieces
  // it needs into the cache rather than a whole file's filter (a megabyte per 1M keys), which
  // a small cache would evict at once and read again on every miss.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.partition_filters = true;
  t.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
  t.metadata_block_size = 4096;
  t.cache_index_and_filter_blocks_with_high_priority = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

rocksdb::Options ReadOnlyOptions() {
  rocksdb::Options o;
  o.create_if_missing = false;
  o.info_log = std::make_shared<DiscardingLogger>();
  return o;
}

bool IsSst(const std::string& name) { return name.size() > 4 && name.compare(name.size() - 4, 4, ".sst") == 0; }

const StateDescriptor kDefaultDescriptor{StateKind::kValue, "int64", kDefaultStateName};

// A database opened with every column family; closes it (and removes its temporary directory,
// when it was materialized from an incremental snapshot) on destruction.
struct OpenedDb {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // handles[0] is the default family
  std::vector<std::string> names;
  std::string temp_dir;
  bool writable = false;                // a changelog checkpoint's, its segments applied
  std::string snapshot_dir;             // what temp_dir was materialized from
  std::vector<SharedFileRef> shared;    // and the shared files linked into it
  OpenedDb() = default;
  // `s` with the paths of the temporary directory replaced by those of the snapshot and its
  // shared files, so that an error names the file to look at.
  Status Translate(Status s) const {
    if (s.ok() || temp_dir.empty()) return s;
    std::string m = s.message();
    auto replace = [&m](const std::string& from, const std::string& to) {
      for (size_t p = m.find(from); p != std::string::npos; p = m.find(from, p + to.size())) m.replace(p, from.size(), to);
    };
    for (const SharedFileRef& r : shared) replace(temp_dir + "/" + r.name, r.path);
    replace(temp_dir, snapshot_dir);
    return s.IsCorruption() ? Status::Corruption(m) : Status::IOError(m);
  }
  OpenedDb(const OpenedDb&) = delete;
  OpenedDb& operator=(const OpenedDb&) = delete;
  ~OpenedDb() { Close(); }
  void Close() {
    if (db != nullptr) {
      for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
      delete db;
    }
    db = nullptr;
    handles.clear();
    if (!temp_dir.empty()) {
      std::error_code ec;
      fs::remove_all(temp_dir, ec);
      temp_dir.clear();
    }
  }
};

// Opens `dir` with all its column families (the default first).
rocksdb::Status OpenFamilies(const rocksdb::Options& o, const std::string& dir, bool read_only, OpenedDb* out) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(o, dir, &names);
  if (!s.ok()) names = {rocksdb::kDefaultColumnFamilyName};
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  cfs.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o));
  for (const std::string& n : names)
    if (n != rocksdb::kDefaultColumnFamilyName) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions(o));
  out->names.clear();
  for (const auto& c : cfs) out->names.push_back(c.name);
  return read_only ? rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(o), dir, cfs, &out->handles, &out->db)
                   : rocksdb::DB::Open(rocksdb::DBOptions(o), dir, cfs, &out->handles, &out->db);
}

// Links `from` to `to`, or copies it (fsynced) when linking is not possible.
Status LinkOrCopy(const std::string& from, const std::string& to) {
  if (::link(from.c_str(), to.c_str()) == 0) return Status::OK();
  if (errno != EXDEV && errno != EPERM) return Status::FromErrno("cannot hard-link " + from + " to", to, errno);
  std::error_code ec;
  fs::copy_file(from, to, ec);
  if (ec) return Status::IOError("cannot copy " + from + " to " + to + ": " + ec.message());
  return FsyncFile(to);
}

// Makes `target` an openable database from the incremental snapshot `keyed_dir`: its own
// files copied, the shared SST files it lists linked under their names and its other shared
// database files (a changelog checkpoint's materialization) copied, since the database that
// opens them may rewrite them. Changelog segments are not database files: left out (the
// caller applies them, ApplySegment).
Status Materialize(const std::string& keyed_dir, const std::vector<SharedFileRef>& refs, const std::string& target) {
  std::error_code ec;
  fs::create_directories(target, ec);
  if (ec) return Status::IOError("cannot create directory " + target + ": " + ec.message());
  for (fs::directory_iterator it(keyed_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (name == kSharedListFileName) continue;
    fs::copy_file(it->path(), target + "/" + name, ec);
    if (ec) return Status::IOError("cannot copy " + it->path().string() + ": " + ec.message());
  }
  if (ec) return Status::IOError("cannot list " + keyed_dir + ": " + ec.message());
  for (const SharedFileRef& r : refs) {
    if (!PathExists(r.path))
      return Status::Corruption("keyed state snapshot " + keyed_dir + " references the missing shared file " + r.path);
    if (IsChangelogSegmentName(r.name)) continue;
    if (IsSst(r.name)) {
      CAIRN_RETURN_IF_ERROR(LinkOrCopy(r.path, target + "/" + r.name));
    } else {
      fs::copy_file(r.path, target + "/" + r.name, ec);
      if (ec) return Status::IOError("cannot copy " + r.path + ": " + ec.message());
    }
  }
  return Status::OK();
}

// The changelog segments among `refs`, in the order listed (the order they were written).
std::vector<std::string> SegmentPaths(const std::vector<SharedFileRef>& refs) {
  std::vector<std::string> out;
  for (const SharedFileRef& r : refs)
    if (IsChangelogSegmentName(r.name)) out.push_back(r.path);
  return out;
}

std::string EncodeKey(uint32_t key_group, std::string_view key);
// EncodeKey's first kKeyGroupPrefixSize bytes: the key group, big-endian.
void PutKeyGroupPrefix(uint32_t key_group, char out[kKeyGroupPrefixSize]);
// The same into *out, reusing its capacity (loops that encode a key per entry).
void EncodeKeyInto(uint32_t key_group, std::string_view key, std::string* out);
// An entry of a delta with the first 16 bytes of its EncodeKey (key group, then up to
// kInlineKeyBytes key bytes) as two big-endian numbers, zero-padded, and its value: what
// sorting a delta into RocksDB's (bytewise) key order compares and moves, so that an entry
// whose key has at most kInlineKeyBytes bytes is compared and written out without reading the
// delta's entry or the key's bytes in the table's arena again (both at random addresses then).
struct OrderedEntry {
  static constexpr size_t kInlineKeyBytes = 14;
  static constexpr size_t kEncodedBytes = kKeyGroupPrefixSize + kInlineKeyBytes;  // high, low
  static_assert(kEncodedBytes == 2 * sizeof(uint64_t));
  uint64_t high;            // key group (16 bits), key bytes 0-5
  uint64_t low;             // key bytes 6-13
  uint32_t index;           // into StateDelta::entries
  uint32_t key_length : 31;  // of the key, without the key group (keys < 2 GiB)
  uint32_t deleted : 1;
  int64_t value;
  // Of delta.entries[index].
  static OrderedEntry Of(const StateDelta& delta, uint32_t index);
  bool inline_key() const { return key_length <= kInlineKeyBytes; }
  // EncodeKey(key_group, key) of an inline_key() entry, in
  // out[0, kKeyGroupPrefixSize + key_length).
  void EncodedKey(char out[kEncodedBytes]) const;
};
// RocksDB's key order, ties (the same key) by position, so that a later entry for a key wins;
// reads the keys in `delta` only when both are longer than kInlineKeyBytes and their first
// kInlineKeyBytes bytes are equal.
bool KeyOrderLess(const StateDelta& delta, const OrderedEntry& x, const OrderedEntry& y);
// Whether x and y (neighbours in KeyOrderLess) hold the same key.
bool SameKey(const StateDelta& delta, const OrderedEntry& x, const OrderedEntry& y);
// Sorts `order` by KeyOrderLess: a radix sort by the bytes of `high` (most significant first,
// in place, down to buckets of 64K entries; then least significant first, through a 2 MiB
// buffer), then each run of equal `high` by KeyOrderLess. About twice as fast as std::sort on
// 100K-1M entries (its log2(n) comparisons per entry are its cost), and its buffer does not
// grow with the delta (bench: docs/benchmarks.md's twenty-second round).
void SortInKeyOrder(const StateDelta& delta, std::vector<OrderedEntry>* order);
void EncodeValue(int64_t value, char out[kValueSize]);
// Default-state entries written into `db` as one table file built beside the database
// (`<db>.<suffix>.sst`, its own options) and ingested (moved: a hard link) into it: the table a
// flush of the same entries written to the memtable would make, without the memtable. Add()
// takes keys in strictly ascending stored order (key group, then key bytes); Finish() fsyncs
// and ingests the file (nothing when nothing was added). The file is removed either way.
class DefaultStateIngest {
 public:
  DefaultStateIngest(rocksdb::DB* db, std::string_view suffix);
  ~DefaultStateIngest();
  Status Add(uint32_t key_group, std::string_view key, int64_t value, bool deleted);
  // The same with the key already encoded (EncodeKey).
  Status AddEncoded(const rocksdb::Slice& key, int64_t value, bool deleted);
  // An entry as stored (EncodeKey, EncodeValue): what a scan of another database reads.
  Status AddStored(const rocksdb::Slice& key, const rocksdb::Slice& value);
  Status Finish();

 private:
  Status Open();  // the writer, at the first entry

  rocksdb::DB* const db_;
  const std::string file_;
  std::unique_ptr<rocksdb::SstFileWriter> writer_;  // opened by the first Add
  std::string key_;
};
// Writes the default-state entries of `delta` (in `order`: RocksDB's key order, ties by
// position) into `db` through a DefaultStateIngest; a later entry for a key wins.
Status IngestSorted(rocksdb::DB* db, const StateDelta& delta, const std::vector<OrderedEntry>& order);

using FamilyFn = std::function<Status(std::string_view state, rocksdb::ColumnFamilyHandle** cf)>;

// Applies the changelog segments `paths` (in write order) to `db`, coalesced and in key order
// (CoalesceChangelogSegments): the default state's entries as one ingested table file
// (DefaultStateIngest), the named states' in batches (no WAL); `family` gives the column family
// of a named state, made when missing. With `stop`, gives up (Aborted) once it is set, every
// kRestoreBatchEntries entries (before the table file is ingested) and between batches.
Status ApplySegments(rocksdb::DB* db, const std::vector<std::string>& paths, const FamilyFn& family,
                     const std::atomic<bool>* stop = nullptr);

// Writes every column family's memtable to SST files.
rocksdb::Status FlushFamilies(rocksdb::DB* db, const std::map<std::string, rocksdb::ColumnFamilyHandle*>& families) {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  std::vector<rocksdb::ColumnFamilyHandle*> all = {db->DefaultColumnFamily()};
  for (const auto& [name, h] : families) all.push_back(h);
  return db->Flush(fo, all);
}

// A new, empty directory below `parent` (the system's temporary directory when empty).
Status MakeTempDir(std::string parent, std::string* out) {
  if (parent.empty()) {
    std::error_code ec;
    parent = fs::temp_directory_path(ec).string();
    if (ec) parent = "/tmp";
  }
  std::string tmpl = parent + "/.cairn-keyed-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno("cannot create a temporary directory in", parent, errno);
  *out = tmpl;
  return Status::OK();
}

// The column family of `state` in `db`, created when missing; Corruption when `state` names no
// state.
Status OpenedFamily(OpenedDb* db, const rocksdb::Options& o, std::string_view state, rocksdb::ColumnFamilyHandle** out) {
  for (size_t i = 1; i < db->names.size(); ++i) {
    if (db->names[i] == state) {
      *out = db->handles[i];
      return Status::OK();
    }
  }
  StateDescriptor d;
  if (!StateDescriptor::Decode(state, &d))
    return Status::Corruption("changelog entry of an unknown state '" + std::string(state) + "'");
  rocksdb::ColumnFamilyHandle* h = nullptr;
  rocksdb::Status s = db->db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(o), std::string(state), &h);
  if (!s.ok()) return FromRocks(s, "cannot create keyed state '" + std::string(state) + "' in", db->temp_dir);
  db->handles.push_back(h);
  db->names.emplace_back(state);
  *out = h;
  return Status::OK();
}

// Whether a restore was asked to stop (`stop` set), and the error it then returns.
bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }
Status RestoreStopped(const std::string& snapshot_dir) {
  return Status::Aborted("the restore of keyed state from " + snapshot_dir + " was stopped");
}

Status ApplySegments(rocksdb::DB* db, const std::vector<std::string>& paths, const FamilyFn& family,
                     const std::atomic<bool>* stop) {
  if (paths.empty()) return Status::OK();
  std::vector<std::string> buffers;
  std::vector<ChangelogEntry> entries;
  CAIRN_RETURN_IF_ERROR(CoalesceChangelogSegments(paths, &buffers, &entries, stop));
  if (Stopped(stop)) return Status::Aborted("stopped");
  // The default state's entries come first (its state name is empty), in stored key order:
  // one ingested table file. The named states' go into write batches.
  size_t i = 0;
  {
    DefaultStateIngest ingest(db, "apply");
    for (; i < entries.size() && entries[i].state.empty(); ++i) {
      const ChangelogEntry& e = entries[i];
      CAIRN_RETURN_IF_ERROR(ingest.Add(e.key_group, e.key, e.int64, e.deleted).WithContext(
          "changelog segments up to " + paths.back()));
      if ((i + 1) % kRestoreBatchEntries == 0 && Stopped(stop)) return Status::Aborted("stopped");
    }
    CAIRN_RETURN_IF_ERROR(ingest.Finish().WithContext("changelog segments up to " + paths.back()));
    if (Stopped(stop)) return Status::Aborted("stopped");
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::WriteBatch batch;
  std::string_view last_state;
  rocksdb::ColumnFamilyHandle* cf = db->DefaultColumnFamily();
  for (; i < entries.size(); ++i) {
    const ChangelogEntry& e = entries[i];
    // CoalesceChangelogSegments sorts the default state (the empty name) before the others.
    if (e.state.empty())
      return Status::Corruption("changelog segments up to " + paths.back() + " hold entries out of order");
    if (e.state != last_state) {
      StateDescriptor d;
      if (!StateDescriptor::Decode(e.state, &d))
        return Status::Corruption("changelog segment " + paths.back() + " or before holds an unknown state '" +
                                  std::string(e.state) + "'");
      CAIRN_RETURN_IF_ERROR(family(e.state, &cf));
      last_state = e.state;
    }
    const rocksdb::Slice k(e.key.data(), e.key.size());
    rocksdb::Status s =
        e.deleted ? batch.Delete(cf, k) : batch.Put(cf, k, rocksdb::Slice(e.value.data(), e.value.size()));
    if (!s.ok()) return FromRocks(s, "cannot build write batch from", paths.back());
    if (batch.Count() >= kRestoreBatchEntries || i + 1 == entries.size()) {
      s = db->Write(wo, &batch);
      if (!s.ok()) return FromRocks(s, "cannot apply changelog segments up to", paths.back());
      batch.Clear();
      if (Stopped(stop)) return Status::Aborted("stopped");
    }
  }
  return Status::OK();
}

// Opens the stored snapshot `dir` read-only, whichever its form; an incremental one is first
// materialized in a temporary directory below `temp_parent`.
Status OpenSnapshot(const std::string& dir, const std::string& temp_parent, OpenedDb* out) {
  {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return Status::NotFound("keyed state snapshot " + dir + " does not exist");
  }
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  CAIRN_RETURN_IF_ERROR(ReadSharedList(dir, &refs, &incremental));
  std::string open_dir = dir;
  if (incremental) {
    CAIRN_RETURN_IF_ERROR(MakeTempDir(temp_parent, &out->temp_dir));
    out->snapshot_dir = dir;
    out->shared = refs;
    Status st = Materialize(dir, refs, out->temp_dir);
    if (!st.ok()) {
      out->Close();
      return st;
    }
    open_dir = out->temp_dir;
  }
  // A changelog checkpoint: its segments are applied to (a writable copy of) its
  // materialization, which may also be none yet (no CURRENT: an empty database).
  const std::vector<std::string> segments = SegmentPaths(refs);
  const bool writable = incremental && (!segments.empty() || !PathExists(open_dir + "/CURRENT"));
  rocksdb::Options wo = WorkDbOptions(StateBackendOptions{});
  wo.info_log = std::make_shared<DiscardingLogger>();
  out->writable = writable;
  rocksdb::Status s = OpenFamilies(writable ? wo : ReadOnlyOptions(), open_dir, /*read_only=*/!writable, out);
  if (!s.ok()) {
    Status st = out->Translate(FromRocks(s, "cannot open keyed state snapshot", dir));
    out->Close();
    return st;
  }
  Status st = ApplySegments(out->db, segments, [&](std::string_view state, rocksdb::ColumnFamilyHandle** cf) {
    return OpenedFamily(out, wo, state, cf);
  });
  if (!st.ok()) {
    st = out->Translate(st);
    out->Close();
    return st;
  }
  return Status::OK();
}

// The descriptor of column family `name`; false when it names no state.
bool FamilyDescriptor(const std::string& name, StateDescriptor* d) {
  if (name == rocksdb::kDefaultColumnFamilyName) {
    *d = kDefaultDescriptor;
    return true;
  }
  return StateDescriptor::Decode(name, d);
}

std::string RandomToken() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string EncodeKey(uint32_t key_group, std::string_view key) {
  std::string k;
  EncodeKeyInto(key_group, key, &k);
  return k;
}

void PutKeyGroupPrefix(uint32_t key_group, char out[kKeyGroupPrefixSize]) {
  out[0] = static_cast<char>((key_group >> 8) & 0xff);
  out[1] = static_cast<char>(key_group & 0xff);
}

void EncodeKeyInto(uint32_t key_group, std::string_view key, std::string* out) {
  out->clear();
  out->reserve(kKeyGroupPrefixSize + key.size());
  char prefix[kKeyGroupPrefixSize];
  PutKeyGroupPrefix(key_group, prefix);
  out->append(prefix, kKeyGroupPrefixSize);
  out->append(key);
}

// The 8 bytes of `v` in the other byte order on a little-endian machine: a big-endian number
// from its bytes in memory, and back.
uint64_t BigEndian(uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(v);
  return v;
}

OrderedEntry OrderedEntry::Of(const StateDelta& delta, uint32_t index) {
  const StateDelta::Entry& e = delta.entries[index];
  const std::string_view key = delta.key(e);
  char b[kEncodedBytes] = {};
  PutKeyGroupPrefix(e.key_group, b);
  if (!key.empty()) std::memcpy(b + kKeyGroupPrefixSize, key.data(), std::min(key.size(), kInlineKeyBytes));
  uint64_t high = 0, low = 0;
  std::memcpy(&high, b, 8);
  std::memcpy(&low, b + 8, 8);
  return OrderedEntry{BigEndian(high), BigEndian(low), index, static_cast<uint32_t>(key.size()), e.deleted, e.value};
}

void OrderedEntry::EncodedKey(char out[kEncodedBytes]) const {
  const uint64_t h = BigEndian(high), l = BigEndian(low);
  std::memcpy(out, &h, 8);
  std::memcpy(out + 8, &l, 8);
}

bool KeyOrderLess(const StateDelta& delta, const OrderedEntry& x, const OrderedEntry& y) {
  if (x.high != y.high) return x.high < y.high;
  if (x.low != y.low) return x.low < y.low;
  // The first 16 encoded bytes are equal (zero-padded). When one key is at most
  // kInlineKeyBytes long, it is a prefix of the other (or the same key): shorter first.
  if (x.inline_key() || y.inline_key()) {
    return x.key_length != y.key_length ? x.key_length < y.key_length : x.index < y.index;
  }
  const int c = delta.key(delta.entries[x.index]).compare(delta.key(delta.entries[y.index]));
  return c != 0 ? c < 0 : x.index < y.index;
}

bool SameKey(const StateDelta& delta, const OrderedEntry& x, const OrderedEntry& y) {
  if (x.high != y.high || x.low != y.low || x.key_length != y.key_length) return false;
  return x.inline_key() || delta.key(delta.entries[x.index]) == delta.key(delta.entries[y.index]);
}

// Byte `d` of x.high (0: the least significant): a radix sort's digit.
unsigned Digit(const OrderedEntry& x, int d) { return static_cast<unsigned>(x.high >> (8 * d)) & 0xff; }

// Sorts the n entries at `a` by digits [0, top] of `high` (least significant first, a digit
// they all share skipped), through `spare` (room for n), then each run of equal `high` by
// `less`.
template <typename Less>
void SortBucket(OrderedEntry* a, size_t n, int top, OrderedEntry* spare, const Less& less) {
  std::array<std::array<size_t, 256>, 8> counts;
  for (int d = 0; d <= top; ++d) counts[d].fill(0);
  for (size_t i = 0; i < n; ++i) {
    for (int d = 0; d <= top; ++d) ++counts[d][Digit(a[i], d)];
  }
  OrderedEntry* from = a;
  OrderedEntry* to = spare;
  for (int d = 0; d <= top; ++d) {
    std::array<size_t, 256>& at = counts[d];
    if (at[Digit(from[0], d)] == n) continue;
    size_t sum = 0;
    for (size_t& c : at) sum += std::exchange(c, sum);
    for (size_t i = 0; i < n; ++i) to[at[Digit(from[i], d)]++] = from[i];  // stable
    std::swap(from, to);
  }
  if (from != a) std::copy(from, from + n, a);
  for (size_t i = 0; i < n;) {
    size_t end = i + 1;
    while (end < n && a[end].high == a[i].high) ++end;
    if (end - i > 1) std::sort(a + i, a + end, less);
    i = end;
  }
}

constexpr size_t kSortBucket = size_t{1} << 16;  // entries: a 2 MiB spare buffer

// Sorts the n entries at `a`, equal in the digits of `high` above `top`: in place by digit
// `top` (each entry swapped into its bucket), then each bucket likewise; a bucket of at most
// kSortBucket entries by SortBucket, which streams (faster than swapping) through `spare`.
template <typename Less>
void SortByDigits(OrderedEntry* a, size_t n, int top, OrderedEntry* spare, const Less& less) {
  if (n <= 64 || top < 0) return std::sort(a, a + n, less);
  if (n <= kSortBucket) return SortBucket(a, n, top, spare, less);
  std::array<size_t, 256> count{};
  for (size_t i = 0; i < n; ++i) ++count[Digit(a[i], top)];
  if (count[Digit(a[0], top)] == n) return SortByDigits(a, n, top - 1, spare, less);
  std::array<size_t, 256> next, end;
  size_t sum = 0;
  for (size_t b = 0; b < 256; ++b) {
    next[b] = sum;
    sum += count[b];
    end[b] = sum;
  }
  for (unsigned b = 0; b < 256; ++b) {
    while (next[b] < end[b]) {  // place the entry at next[b], and the one it displaces, ...
      OrderedEntry e = a[next[b]];
      for (unsigned t = Digit(e, top); t != b; t = Digit(e, top)) std::swap(e, a[next[t]++]);
      a[next[b]++] = e;
    }
  }
  for (size_t b = 0, start = 0; b < 256; start += count[b++]) {
    if (count[b] > 1) SortByDigits(a + start, count[b], top - 1, spare, less);
  }
}

void SortInKeyOrder(const StateDelta& delta, std::vector<OrderedEntry>* order) {
  std::vector<OrderedEntry> spare(std::min(order->size(), kSortBucket));
  SortByDigits(order->data(), order->size(), 7, spare.data(),
               [&](const OrderedEntry& x, const OrderedEntry& y) { return KeyOrderLess(delta, x, y); });
}

void EncodeValue(int64_t value, char out[kValueSize]) {
  uint64_t v = static_cast<uint64_t>(value);
  for (size_t i = 0; i < kValueSize; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

DefaultStateIngest::DefaultStateIngest(rocksdb::DB* db, std::string_view suffix)
    : db_(db), file_(db->GetName() + "." + std::string(suffix) + ".sst") {}

DefaultStateIngest::~DefaultStateIngest() {
  writer_.reset();
  ::unlink(file_.c_str());  // unfinished, or left by a crash: nothing refers to it
}

Status DefaultStateIngest::Open() {
  if (writer_ != nullptr) return Status::OK();
  ::unlink(file_.c_str());
  writer_ = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), db_->GetOptions(db_->DefaultColumnFamily()),
                                                    db_->DefaultColumnFamily());
  rocksdb::Status s = writer_->Open(file_);
  if (!s.ok()) return FromRocks(s, "cannot create", file_);
  return Status::OK();
}

Status DefaultStateIngest::Add(uint32_t key_group, std::string_view key, int64_t value, bool deleted) {
  EncodeKeyInto(key_group, key, &key_);
  return AddEncoded(key_, value, deleted);
}

Status DefaultStateIngest::AddEncoded(const rocksdb::Slice& key, int64_t value, bool deleted) {
  CAIRN_RETURN_IF_ERROR(Open());
  char v[kValueSize];
  EncodeValue(value, v);
  rocksdb::Status s = deleted ? writer_->Delete(key) : writer_->Put(key, rocksdb::Slice(v, kValueSize));
  if (!s.ok()) return FromRocks(s, "cannot write", file_);
  return Status::OK();
}

Status DefaultStateIngest::AddStored(const rocksdb::Slice& key, const rocksdb::Slice& value) {
  CAIRN_RETURN_IF_ERROR(Open());
  rocksdb::Status s = writer_->Put(key, value);
  if (!s.ok()) return FromRocks(s, "cannot write", file_);
  return Status::OK();
}

Status DefaultStateIngest::Finish() {
  if (writer_ == nullptr) return Status::OK();
  rocksdb::Status s = writer_->Finish();  // fsyncs the file
  writer_.reset();
  if (!s.ok()) return FromRocks(s, "cannot finish", file_);
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;           // a hard link, not a copy
  io.write_global_seqno = false;  // the sequence number goes to the MANIFEST, not into the file
  io.verify_file_checksum = false;
  s = db_->IngestExternalFile({file_}, io);
  if (!s.ok()) return FromRocks(s, "cannot ingest keyed state into", db_->GetName());
  return Status::OK();
}

Status IngestSorted(rocksdb::DB* db, const StateDelta& delta, const std::vector<OrderedEntry>& order) {
  DefaultStateIngest ingest(db, "ingest");
  // A short key is in `order` itself. A long one is read in the arena, at a random address:
  // the long key 8 places ahead is already on its way to the cache.
  const size_t n = order.size();
  char inline_key[OrderedEntry::kEncodedBytes];
  for (size_t i = 0; i < n; ++i) {
    if (i + 8 < n && !order[i + 8].inline_key()) __builtin_prefetch(delta.key(delta.entries[order[i + 8].index]).data());
    const OrderedEntry& o = order[i];
    if (i + 1 < n && SameKey(delta, o, order[i + 1])) continue;  // the same key again later: that entry wins
    if (o.inline_key()) {
      o.EncodedKey(inline_key);
      const rocksdb::Slice key(inline_key, kKeyGroupPrefixSize + o.key_length);
      CAIRN_RETURN_IF_ERROR(ingest.AddEncoded(key, o.value, o.deleted));
    } else {
      const StateDelta::Entry& e = delta.entries[o.index];
      CAIRN_RETURN_IF_ERROR(ingest.Add(e.key_group, delta.key(e), o.value, o.deleted));
    }
  }
  return ingest.Finish();
}

// Decodes one stored entry; Corruption naming `dir` when its shape is wrong.
Status DecodeEntry(const rocksdb::Slice& k, const rocksdb::Slice& v, const std::string& dir, uint32_t* key_group,
                   std::string_view* key, int64_t* value) {
  if (k.size() < kKeyGroupPrefixSize || v.size() != kValueSize) {
    return Status::Corruption("keyed state " + dir + ": malformed entry (key " + std::to_string(k.size()) +
                              " bytes, value " + std::to_string(v.size()) + " bytes)");
  }
  const auto* kp = reinterpret_cast<const unsigned char*>(k.data());
  *key_group = (static_cast<uint32_t>(kp[0]) << 8) | kp[1];
  *key = std::string_view(k.data() + kKeyGroupPrefixSize, k.size() - kKeyGroupPrefixSize);
  const auto* vp = reinterpret_cast<const unsigned char*>(v.data());
  uint64_t u = 0;
  for (size_t i = 0; i < kValueSize; ++i) u |= static_cast<uint64_t>(vp[i]) << (8 * i);
  *value = static_cast<int64_t>(u);
  return Status::OK();
}

Status CheckSnapshotExists(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("keyed state snapshot " + dir + " does not exist");
  return Status::OK();
}

Status CheckAbsent(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) return Status::InvalidArgument(path + " already exists");
  return Status::OK();
}

Status CreateParentDirs(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::OK();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return FromErrorCode("cannot create directory", parent.string(), ec);
  return Status::OK();
}


// Makes `work_dir` a copy of the database in `snapshot_dir` that shares its SST files: *.sst
// are hard-linked (copied if the link fails across file systems), the rest is copied.
Status LinkSnapshotFiles(const std::string& snapshot_dir, const std::string& work_dir) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) return FromErrorCode("cannot create directory", work_dir, ec);
  for (fs::directory_iterator it(snapshot_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    const std::string from = it->path().string();
    const std::string to = work_dir + "/" + name;
    const bool is_sst = name.size() > 4 && name.compare(name.size() - 4, 4, ".sst") == 0;
    if (is_sst) {
      if (::link(from.c_str(), to.c_str()) == 0) continue;
      if (errno != EXDEV && errno != EPERM) return Status::FromErrno("cannot hard-link " + from + " to", to, errno);
    }
    fs::copy_file(from, to, ec);
    if (ec) return FromErrorCode("cannot copy " + from + " to", to, ec);
  }
  if (ec) return FromErrorCode("cannot list", snapshot_dir, ec);
  return Status::OK();
}

// Default-state entries gathered into batches for KeyedInt64State::LoadEntries (their keys
// copied: an iterator's key lives until its Next).
class LoadBatch {
 public:
  explicit LoadBatch(KeyedInt64State* state) : state_(state) {}
  ~LoadBatch() { Flush(); }
  void Add(std::string_view key, int64_t value) {
    offsets_.push_back(keys_.size());
    keys_.append(key);
    values_.push_back(value);
    if (values_.size() == kEntries) Flush();
  }
  void Flush() {
    if (values_.empty()) return;
    std::string_view views[kEntries];
    for (size_t i = 0; i < values_.size(); ++i) {
      const size_t end = i + 1 < values_.size() ? offsets_[i + 1] : keys_.size();
      views[i] = std::string_view(keys_.data() + offsets_[i], end - offsets_[i]);
    }
    state_->LoadEntries(views, values_.data(), values_.size());
    keys_.clear();
    offsets_.clear();
    values_.clear();
  }

 private:
  static constexpr size_t kEntries = 256;
  KeyedInt64State* const state_;
  std::string keys_;
  std::vector<size_t> offsets_;
  std::vector<int64_t> values_;
};

// ReadOptions of a scan that reads every block of a snapshot once, in order: read ahead, and
// leave the block cache alone (the blocks are not read again; caching them costs allocations).
rocksdb::ReadOptions ScanOptions() {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = kScanReadahead;
  return ro;
}

Status OutsideRange(const std::string& snapshot_dir, uint32_t key_group, const KeyGroupRange& range) {
  return Status::Corruption("keyed state snapshot " + snapshot_dir + " holds key group " + std::to_string(key_group) +
                            " outside its range " + range.ToString());
}

// Adds the default-state entry (k, v) of `snapshot_dir` to `batch`; it must lie in `range`.
Status AddDefaultEntry(const rocksdb::Slice& k, const rocksdb::Slice& v, const std::string& snapshot_dir,
                       const KeyGroupRange& range, LoadBatch* batch) {
  uint32_t kg;
  std::string_view key;
  int64_t value = 0;
  CAIRN_RETURN_IF_ERROR(DecodeEntry(k, v, snapshot_dir, &kg, &key, &value));
  if (!range.Contains(kg)) return OutsideRange(snapshot_dir, kg, range);
  batch->Add(key, value);
  return Status::OK();
}

// Loads the default-state entries `it` yields into `batch` (*n counts them); all must lie in
// `range`. Gives up (RestoreStopped) once `stop` is set, every kRestoreBatchEntries entries.
Status LoadDefaultEntries(rocksdb::Iterator* it, const std::string& snapshot_dir, const KeyGroupRange& range,
                          LoadBatch* batch, size_t* n, const std::atomic<bool>* stop) {
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (++*n % kRestoreBatchEntries == 0 && Stopped(stop)) return RestoreStopped(snapshot_dir);
    CAIRN_RETURN_IF_ERROR(AddDefaultEntry(it->key(), it->value(), snapshot_dir, range, batch));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot read keyed state restored from", snapshot_dir);
  return Status::OK();
}

// The table files of `db`'s default family (db->handles[0]) in an order that lets them be read
// one by one instead of through the database's merging iterator, when its memtables are empty
// and it has no blob files (nullopt otherwise). When no two files' key ranges overlap, they
// come in key order and `overlap` is false. Otherwise newest first: level 0's files by sequence
// number, newest first (nullopt when two share one), then each further level in turn; of two
// files that hold a key, the earlier one holds its newer version. The caller keeps the files
// from being deleted (DisableFileDeletions) while it reads them.
struct DefaultFiles {
  std::vector<std::string> paths;
  bool overlap = false;
};
std::optional<DefaultFiles> ReadableDefaultFiles(OpenedDb* db) {
  for (const char* p : {"rocksdb.num-entries-active-mem-table", "rocksdb.num-entries-imm-mem-tables"}) {
    uint64_t entries = 0;
    if (!db->db->GetIntProperty(db->handles[0], p, &entries) || entries != 0) return std::nullopt;
  }
  rocksdb::ColumnFamilyMetaData meta;
  db->db->GetColumnFamilyMetaData(db->handles[0], &meta);
  if (!meta.blob_files.empty()) return std::nullopt;
  std::vector<const rocksdb::SstFileMetaData*> files;
  for (const rocksdb::LevelMetaData& level : meta.levels)
    for (const rocksdb::SstFileMetaData& f : level.files) files.push_back(&f);
  auto path = [](const rocksdb::SstFileMetaData* f) { return f->directory + "/" + f->relative_filename; };
  DefaultFiles out;
  // Bytewise key order (the families' comparator), as std::string compares.
  std::sort(files.begin(), files.end(), [](const auto* a, const auto* b) { return a->smallestkey < b->smallestkey; });
  for (size_t i = 1; i < files.size() && !out.overlap; ++i)
    out.overlap = !(files[i - 1]->largestkey < files[i]->smallestkey);
  if (!out.overlap) {
    for (const auto* f : files) out.paths.push_back(path(f));
    return out;
  }
  for (const rocksdb::LevelMetaData& level : meta.levels) {
    std::vector<const rocksdb::SstFileMetaData*> in(level.files.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = &level.files[i];
    if (level.level == 0) {
      std::sort(in.begin(), in.end(), [](const auto* a, const auto* b) { return a->largest_seqno > b->largest_seqno; });
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i]->largest_seqno == in[i - 1]->largest_seqno) return std::nullopt;
    }
    for (const auto* f : in) out.paths.push_back(path(f));
  }
  return out;
}

// At most this many overlapping files are merged by LoadMergedFiles (more than a level 0 at
// RocksDB's stop trigger, 36 by default, plus the levels below it); more are read through the
// database's iterator. Their read-ahead buffers share kMergeReadahead, down to
// kMinMergeReadahead a file.
constexpr size_t kMaxMergedFiles = 64;
constexpr size_t kMergeReadahead = 16 << 20;
constexpr size_t kMinMergeReadahead = 256 << 10;

// Loads the entries of the table files `paths` (ReadableDefaultFiles: newest first) whose key
// ranges overlap: merged by key through a heap of the files' next keys, each key's entry from
// the first file that holds it. Sets *merged false (and loads nothing) when there are more than
// kMaxMergedFiles, or a file holds deletions or merge operands, which a file read on its own
// would not show to the merge.
Status LoadMergedFiles(const std::vector<std::string>& paths, const rocksdb::Options& o, const std::string& snapshot_dir,
                       const KeyGroupRange& range, LoadBatch* batch, size_t* n, const std::atomic<bool>* stop,
                       bool* merged) {
  struct Cursor {
    std::unique_ptr<rocksdb::SstFileReader> reader;
    std::unique_ptr<rocksdb::Iterator> it;
  };
  *merged = false;
  if (paths.size() > kMaxMergedFiles) return Status::OK();
  rocksdb::ReadOptions ro = ScanOptions();
  ro.readahead_size = std::min(kScanReadahead, std::max(kMinMergeReadahead, kMergeReadahead / paths.size()));
  std::vector<Cursor> cursors;
  for (const std::string& p : paths) {
    Cursor c;
    c.reader = std::make_unique<rocksdb::SstFileReader>(o);
    rocksdb::Status s = c.reader->Open(p);
    if (!s.ok()) return FromRocks(s, "cannot read keyed state restored from", snapshot_dir);
    const std::shared_ptr<const rocksdb::TableProperties> props = c.reader->GetTableProperties();
    if (props == nullptr || props->num_deletions != 0 || props->num_range_deletions != 0 ||
        props->num_merge_operands != 0)
      return Status::OK();
    c.it.reset(c.reader->NewIterator(ro));
    c.it->SeekToFirst();
    cursors.push_back(std::move(c));
  }
  *merged = true;
  // A min-heap of the files not yet read to the end, by (next key, file): its top holds the
  // smallest key, and of the files that hold it the newest.
  std::vector<rocksdb::Slice> keys(cursors.size());
  auto after = [&keys](uint32_t a, uint32_t b) {
    const int c = keys[a].compare(keys[b]);
    return c > 0 || (c == 0 && a > b);
  };
  std::vector<uint32_t> heap;
  // Puts file i into the heap at its current entry, unless it has none left.
  auto push = [&](uint32_t i) {
    if (!cursors[i].it->Valid()) return;
    keys[i] = cursors[i].it->key();
    heap.push_back(i);
    std::push_heap(heap.begin(), heap.end(), after);
  };
  auto pop = [&] {
    const uint32_t top = heap.front();
    std::pop_heap(heap.begin(), heap.end(), after);
    heap.pop_back();
    return top;
  };
  for (uint32_t i = 0; i < cursors.size(); ++i) push(i);
  while (!heap.empty()) {
    const uint32_t best = pop();
    if (++*n % kRestoreBatchEntries == 0 && Stopped(stop)) return RestoreStopped(snapshot_dir);
    CAIRN_RETURN_IF_ERROR(AddDefaultEntry(keys[best], cursors[best].it->value(), snapshot_dir, range, batch));
    // The older versions of this key (each comes to the top in turn), then the entry itself
    // (its key's bytes go with it).
    while (!heap.empty() && keys[heap.front()] == keys[best]) {
      const uint32_t older = pop();
      cursors[older].it->Next();
      push(older);
    }
    cursors[best].it->Next();
    push(best);
  }
  for (const Cursor& c : cursors)
    if (!c.it->status().ok()) return FromRocks(c.it->status(), "cannot read keyed state restored from", snapshot_dir);
  return Status::OK();
}

// Loads the default family of `db` into `state`. Its table files are read one by one
// (SstFileReader) when ReadableDefaultFiles allows it, which skips the merging iterator a
// database iterator puts over the files even when there is one (docs/benchmarks.md,
// twenty-first round): in key order when they do not overlap, merged here (LoadMergedFiles)
// when they do. Otherwise through a database iterator.
Status LoadDefaultFamily(OpenedDb* db, const std::string& snapshot_dir, const KeyGroupRange& range,
                         KeyedInt64State* state, size_t* n, const std::atomic<bool>* stop) {
  LoadBatch batch(state);
  rocksdb::Status s = db->db->DisableFileDeletions();  // a compaction may start once it is open
  if (!s.ok()) return FromRocks(s, "cannot read keyed state restored from", snapshot_dir);
  const std::optional<DefaultFiles> files = ReadableDefaultFiles(db);
  const rocksdb::Options o = db->db->GetOptions(db->handles[0]);
  Status st;
  bool loaded = false;
  if (files.has_value() && files->overlap) {
    st = LoadMergedFiles(files->paths, o, snapshot_dir, range, &batch, n, stop, &loaded);
  } else if (files.has_value()) {
    loaded = true;
    for (size_t i = 0; i < files->paths.size() && st.ok(); ++i) {
      rocksdb::SstFileReader reader(o);
      s = reader.Open(files->paths[i]);
      if (!s.ok()) {
        st = FromRocks(s, "cannot read keyed state restored from", snapshot_dir);
        break;
      }
      std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(ScanOptions()));
      st = LoadDefaultEntries(it.get(), snapshot_dir, range, &batch, n, stop);
    }
  }
  if (st.ok() && !loaded) {
    std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator(ScanOptions(), db->handles[0]));
    st = LoadDefaultEntries(it.get(), snapshot_dir, range, &batch, n, stop);
  }
  s = db->db->EnableFileDeletions(/*force=*/false);
  if (st.ok() && !s.ok()) st = FromRocks(s, "cannot read keyed state restored from", snapshot_dir);
  return st;
}

// Loads every entry of `db` (a database restored from `snapshot_dir`) into `state` (the
// default state) and `named` (the others), each when non-null; all must lie in `range`. Gives
// up (RestoreStopped) once `stop` is set, every kRestoreBatchEntries entries.
Status LoadAll(OpenedDb* db, const std::string& snapshot_dir, const KeyGroupRange& range, KeyedInt64State* state,
               HeapKeyedStateBackend* named, const std::atomic<bool>* stop) {
  size_t n = 0;
  for (size_t f = 0; f < db->handles.size(); ++f) {
    if (f == 0) {  // the default family (OpenFamilies)
      if (state != nullptr) CAIRN_RETURN_IF_ERROR(LoadDefaultFamily(db, snapshot_dir, range, state, &n, stop));
      continue;
    }
    if (named == nullptr) continue;
    std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator(ScanOptions(), db->handles[f]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (++n % kRestoreBatchEntries == 0 && Stopped(stop)) return RestoreStopped(snapshot_dir);
      if (it->key().size() < kKeyGroupPrefixSize)
        return Status::Corruption("keyed state " + snapshot_dir + ": malformed entry in " + db->names[f]);
      const auto* kp = reinterpret_cast<const unsigned char*>(it->key().data());
      const uint32_t kg = (static_cast<uint32_t>(kp[0]) << 8) | kp[1];
      if (!range.Contains(kg)) return OutsideRange(snapshot_dir, kg, range);
      CAIRN_RETURN_IF_ERROR(named->LoadNamed(db->names[f], std::string_view(it->key().data(), it->key().size()),
                                             std::string_view(it->value().data(), it->value().size()))
                                .WithContext("keyed state snapshot " + snapshot_dir));
    }
    if (!it->status().ok()) return FromRocks(it->status(), "cannot read keyed state restored from", snapshot_dir);
  }
  return Status::OK();
}

// Loads the changelog segments `paths` of the snapshot `snapshot_dir` into `state` and `named`
// (over what LoadAll loaded from its materialization); a later segment's entry replaces an
// earlier one's. All must lie in `range`. Gives up (RestoreStopped) once `stop` is set, between
// passes and every kRestoreBatchEntries entries.
//
// Most segments list their entries in the slot order of the table that wrote them, and a
// checkpoint of a short interval lists many (one per checkpoint since the last
// materialization), each touching keys all over the table. Loaded one after another, every
// segment sweeps the whole table, which is far larger than the cache, and each entry misses it
// (most of a restore of 150 segments). So the segments are loaded in groups held in memory
// (segments read until the group holds kSegmentGroupBytes, at most 255 of them), a stripe of
// the table at a time: each segment's entries whose home slots lie in the stripe (2^16 slots,
// 2 MiB, which fit the L2 cache), then the next stripe. The entries of one key then come in
// another order than the segments', so each carries its segment's version
// (KeyedInt64State::LoadVersioned) and an older one never replaces a newer one. Named states' entries, which come after the default
// state's in a segment, are loaded after the stripes, segment by segment in order.
constexpr size_t kSegmentGroupBytes = size_t{64} << 20;
constexpr size_t kSegmentGroupMax = 255;  // versions 1-255 (a byte of the slot)
constexpr unsigned kStripeSlotsLog2 = 16;
constexpr size_t kLoadBatch = 256;  // entries a LoadVersioned call takes

// One segment of a group being loaded a stripe at a time: its entries in order, the next one
// read ahead when it belongs to a later stripe.
struct SegmentCursor {
  SegmentCursor(const std::string& path, std::string_view bytes, uint8_t version, bool slot_ordered)
      : reader(path, bytes), path(path), version(version), slot_ordered(slot_ordered) {}
  ChangelogSegmentReader reader;
  const std::string& path;
  const uint8_t version;
  const bool slot_ordered;  // in this table's slot order (the writer's salt), else loaded at once
  bool have = false;        // `entry` (of `hash`, in `stripe`) read, not loaded yet
  bool leading = true;      // nothing loaded yet: an entry of the last stripe is one that wrapped
  bool done = false;        // at the end, or at a named state's entry (loaded after the stripes)
  ChangelogEntry entry;
  uint64_t hash = 0;
  size_t stripe = 0;
  // Entries of the last stripe met first (displaced from the table's end into its first
  // slots, and so listed first): loaded with that stripe.
  std::vector<std::pair<ChangelogEntry, uint64_t>> wrapped;
};

// Before anything is loaded into `state` (also a materialization's entries, which come in key
// order and so in no table's slot order), the salt and key count of the table that wrote the
// newest of the segments `paths`, so that its segments listed in slot order (most of them,
// usually) load a stripe of slots at a time (LoadSegments; measured in docs/benchmarks.md).
// The key count is bounded by what the segments could hold (an entry takes at least 4 bytes),
// so no hint reserves more than the files could fill. *newest: that segment's bytes, read.
Status AdoptNewestSegmentOrder(const std::vector<std::string>& paths, KeyedInt64State* state, std::string* newest) {
  if (state->size() != 0 || paths.empty()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(paths.back(), newest));
  if (std::optional<SegmentTable> t = ChangelogSegmentTable(*newest)) {
    uint64_t bound = 0;
    for (const std::string& path : paths) {
      std::error_code ec;
      const uint64_t size = fs::file_size(path, ec);
      if (!ec) bound += size / 4;
    }
    state->AdoptSlotOrder(t->salt, static_cast<size_t>(std::min(t->table_keys, bound)));
  }
  return Status::OK();
}

// `newest`: the bytes of the last segment when AdoptNewestSegmentOrder read them, else empty.
Status LoadSegments(const std::vector<std::string>& paths, std::string newest, const std::string& snapshot_dir,
                    const KeyGroupRange& range, KeyedInt64State* state, HeapKeyedStateBackend* named,
                    const std::atomic<bool>* stop) {
  size_t n = 0;
  // Checks an entry's key group (and every kRestoreBatchEntries entries, `stop`).
  auto check = [&](const SegmentCursor& c, const ChangelogEntry& e) -> Status {
    uint32_t kg = e.key_group;
    if (!e.state.empty()) {
      if (e.key.size() < kKeyGroupPrefixSize)
        return Status::Corruption("changelog segment " + c.path + ": malformed entry");
      const auto* kp = reinterpret_cast<const unsigned char*>(e.key.data());
      kg = (static_cast<uint32_t>(kp[0]) << 8) | kp[1];
    }
    if (!range.Contains(kg)) return OutsideRange(snapshot_dir, kg, range);
    if (++n % kRestoreBatchEntries == 0 && Stopped(stop)) return RestoreStopped(snapshot_dir);
    return Status::OK();
  };
  std::vector<std::string> buffers;
  std::vector<std::string_view> keys;
  std::vector<uint64_t> hashes;
  std::vector<int64_t> values;
  auto flush = [&](uint8_t version) {
    state->LoadVersioned(keys.data(), hashes.data(), values.data(), values.size(), version);
    keys.clear();
    hashes.clear();
    values.clear();
  };
  auto add = [&](const ChangelogEntry& e, uint64_t hash, uint8_t version) {
    if (e.deleted) return state->LoadRemovalVersioned(e.key, hash, version);
    keys.push_back(e.key);
    hashes.push_back(hash);
    values.push_back(e.int64);
    if (values.size() == kLoadBatch) flush(version);
  };
  size_t versions_used = 0;  // since BeginVersionedLoad (a fresh table's entries are all version 0)
  for (size_t first = 0; first < paths.size();) {
    if (Stopped(stop)) return RestoreStopped(snapshot_dir);
    // The group: segments [first, end), read whole.
    size_t end = first, bytes = 0;
    buffers.clear();
    while (end < paths.size() && end - first < kSegmentGroupMax && (end == first || bytes < kSegmentGroupBytes)) {
      std::string b;
      if (end + 1 == paths.size() && !newest.empty()) {
        b = std::move(newest);
      } else {
        CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(paths[end], &b));
      }
      bytes += b.size();
      buffers.push_back(std::move(b));
      ++end;
    }
    // Versions go on from the group before while they last (a sweep of the whole table starts
    // them over: once every 255 segments).
    if (versions_used + (end - first) > kSegmentGroupMax) {
      state->BeginVersionedLoad();
      versions_used = 0;
    }
    std::vector<std::optional<SegmentTable>> tables;
    for (const std::string& b : buffers) {
      tables.push_back(ChangelogSegmentTable(b));
      if (const auto& t = tables.back(); t && t->slot_order)
        state->PrepareSlotOrderedLoad(t->salt, static_cast<size_t>(t->entries), static_cast<size_t>(t->table_keys));
    }
    std::vector<SegmentCursor> cursors;
    cursors.reserve(end - first);
    for (size_t i = first; i < end; ++i) {
      const auto& t = tables[i - first];
      cursors.emplace_back(paths[i], buffers[i - first], static_cast<uint8_t>(versions_used + i - first + 1),
                           t && t->slot_order && t->salt == state->salt());
    }
    // The stripes: the top bits of the keys' HomeOrder, 2^kStripeSlotsLog2 of today's slots each.
    const unsigned slots_log2 = static_cast<unsigned>(std::countr_zero(state->slot_count()));
    const unsigned bits = slots_log2 > kStripeSlotsLog2 ? slots_log2 - kStripeSlotsLog2 : 0;
    const size_t stripes = size_t{1} << bits;
    for (size_t s = 0; s < stripes; ++s) {
      if (Stopped(stop)) return RestoreStopped(snapshot_dir);
      for (SegmentCursor& c : cursors) {
        if (s + 1 == stripes) {
          for (const auto& [e, hash] : c.wrapped) add(e, hash, c.version);
          c.wrapped.clear();
        }
        while (!c.done) {
          if (!c.have) {
            if (!c.reader.Next(&c.entry)) {
              CAIRN_RETURN_IF_ERROR(c.reader.status());
              c.done = true;
              break;
            }
            CAIRN_RETURN_IF_ERROR(check(c, c.entry));
            c.have = true;
            if (!c.entry.state.empty()) {
              c.done = true;  // a named state's: the rest of the segment goes in order, below
              break;
            }
            c.hash = KeyHash(c.entry.key);
            c.stripe = c.slot_ordered && bits > 0 ? static_cast<size_t>(state->HomeOrder(c.hash) >> (64 - bits)) : 0;
          }
          if (c.stripe > s) {
            if (!(c.leading && c.stripe + 1 == stripes && s + 1 < stripes)) break;
            c.wrapped.emplace_back(c.entry, c.hash);
          } else {
            add(c.entry, c.hash, c.version);
            c.leading = false;
          }
          c.have = false;
        }
        flush(c.version);
      }
    }
    // What is left of each segment, in order: named states' entries (and whatever follows them).
    for (SegmentCursor& c : cursors) {
      for (bool more = c.have; more || c.reader.Next(&c.entry); more = false) {
        const ChangelogEntry& e = c.entry;
        if (!more) CAIRN_RETURN_IF_ERROR(check(c, e));
        if (!e.state.empty()) {
          CAIRN_RETURN_IF_ERROR(
              named->LoadNamed(e.state, e.key, e.value, e.deleted).WithContext("changelog segment " + c.path));
        } else {
          add(e, KeyHash(e.key), c.version);
          flush(c.version);
        }
      }
      c.have = false;
      CAIRN_RETURN_IF_ERROR(c.reader.status());
    }
    versions_used += end - first;
    first = end;
  }
  return Status::OK();
}

uint64_t FilesSize(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_regular_file(ec2)) {
      uint64_t n = it->file_size(ec2);
      if (!ec2) total += n;
    }
  }
  return total;
}

}  // namespace

RocksDbStateStore::RocksDbStateStore(std::string dir, rocksdb::DB* db, StateBackendOptions options)
    : dir_(std::move(dir)), db_(db), options_(std::move(options)), token_(RandomToken()) {}

RocksDbStateStore::~RocksDbStateStore() {
  StopChangelog();
  for (auto& [name, h] : families_) db_->DestroyColumnFamilyHandle(h);
  delete db_;
}

Status RocksDbStateStore::Create(const std::string& work_dir, std::unique_ptr<RocksDbStateStore>* out) {
  return Create(work_dir, StateBackendOptions{}, out);
}

Status RocksDbStateStore::Create(const std::string& work_dir, const StateBackendOptions& options,
                                 std::unique_ptr<RocksDbStateStore>* out) {
  return Create(work_dir, options, /*start_changelog=*/true, out);
}

Status RocksDbStateStore::Create(const std::string& work_dir, const StateBackendOptions& options, bool start_changelog,
                                 std::unique_ptr<RocksDbStateStore>* out) {
  CAIRN_RETURN_IF_ERROR(CheckAbsent(work_dir));
  CAIRN_RETURN_IF_ERROR(CreateParentDirs(work_dir));
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(WorkDbOptions(options), work_dir, &db);
  if (!s.ok()) return FromRocks(s, "cannot create keyed state database", work_dir);
  out->reset(new RocksDbStateStore(work_dir, db, options));
  if (start_changelog && (*out)->ChangelogOn()) {
    Status st = (*out)->StartChangelog(/*stage=*/false);
    if (!st.ok()) {
      out->reset();
      return st;
    }
  }
  return Status::OK();
}

Status RocksDbStateStore::Family(const std::string& state, rocksdb::ColumnFamilyHandle** out) {
  auto it = families_.find(state);
  if (it != families_.end()) {
    *out = it->second;
    return Status::OK();
  }
  rocksdb::ColumnFamilyHandle* h = nullptr;
  rocksdb::Status s = db_->CreateColumnFamily(rocksdb::ColumnFamilyOptions(WorkDbOptions(options_)), state, &h);
  if (!s.ok()) return FromRocks(s, "cannot create keyed state '" + state + "' in", dir_);
  families_.emplace(state, h);
  *out = h;
  return Status::OK();
}

Status RocksDbStateStore::Stage(std::string* dir) {
  *dir = dir_ + ".stage-" + std::to_string(++staged_);
  std::error_code ec;
  fs::remove_all(*dir, ec);
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_, &raw);
  if (!s.ok()) return FromRocks(s, "cannot start a checkpoint of", dir_);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  s = checkpoint->CreateCheckpoint(*dir, /*log_size_for_flush=*/0);
  if (!s.ok()) return FromRocks(s, "cannot create a local checkpoint of", dir_);
  return Status::OK();
}

void RocksDbStateStore::AddSharedDirSyncs(const std::string& mine, DeferredSyncs* syncs) const {
  if (!shared_dirs_unsynced_ || !PathExists(mine)) return;
  syncs->AddDir(mine);
  syncs->AddDir(options_.shared_dir);
}

Status RocksDbStateStore::LockShared(SharedFilesLock* lock) const {
  // shared_dir is SharedDir(checkpoint.dir): the lock is its parent's.
  return lock->Acquire(fs::path(options_.shared_dir).parent_path().string());
}

Status RocksDbStateStore::Upload(const std::string& staged, const std::string& checkpoint_dir, uint64_t* bytes) {
  CAIRN_RETURN_IF_ERROR(CreateDirs(checkpoint_dir));
  std::vector<std::string> names;
  CAIRN_RETURN_IF_ERROR(ListDir(staged, &names));
  const std::string mine = SharedSubdir();
  std::vector<SharedFileRef> refs;
  std::map<std::string, std::string> now;
  uint64_t total = 0;
  DeferredSyncs syncs;  // SHARED, checkpoint_dir and shared/, each fsynced once at the end
  for (const std::string& name : names) {
    const std::string from = staged + "/" + name;
    if (IsSst(name)) {
      auto it = uploaded_.find(name);
      std::string path = it != uploaded_.end() ? it->second : mine + "/" + token_ + "-" + name;
      refs.push_back(SharedFileRef{name, path});
      now.emplace(name, path);
      continue;
    }
    // MANIFEST, CURRENT, OPTIONS: small, private to this checkpoint.
    const std::string to = checkpoint_dir + "/" + name;
    std::error_code ec;
    fs::copy_file(from, to, ec);
    if (ec) return FromErrorCode("cannot copy " + from + " to", to, ec);
    CAIRN_RETURN_IF_ERROR(FsyncFile(to));
    total += fs::file_size(to, ec);
  }
  {
    // The list first, then the files: a collection (which holds the same lock, in this
    // process or another) sees either neither or both, and a file uploaded by an earlier
    // checkpoint that a collection removed since (that checkpoint failed) is uploaded again.
    SharedFilesLock lock;
    CAIRN_RETURN_IF_ERROR(LockShared(&lock));
    CAIRN_RETURN_IF_ERROR(WriteSharedList(checkpoint_dir, refs, &syncs));
    CAIRN_CRASH_POINT("persist.shared_listed");
    bool made = false;
    for (const SharedFileRef& r : refs) {
      if (PathExists(r.path)) continue;
      if (!made) {
        CAIRN_RETURN_IF_ERROR(CreateDirs(mine));
        made = true;
        shared_dirs_unsynced_ = true;  // until the fsyncs below succeed, here or next time
      }
      CAIRN_RETURN_IF_ERROR(LinkOrCopy(staged + "/" + r.name, r.path));
      std::error_code ec;
      total += fs::file_size(r.path, ec);
    }
    AddSharedDirSyncs(mine, &syncs);
  }
  syncs.AddDir(checkpoint_dir);
  CAIRN_RETURN_IF_ERROR(syncs.SyncAll());
  shared_dirs_unsynced_ = false;
  uploaded_ = std::move(now);
  std::error_code ec;
  fs::remove_all(staged, ec);
  *bytes = total;
  return Status::OK();
}

Status RocksDbStateStore::PersistAndCheckpoint(const StateDelta& delta, const std::string& checkpoint_dir,
                                               uint64_t* bytes) {
  CAIRN_RETURN_IF_ERROR(CheckAbsent(checkpoint_dir));
  for (const std::string& d : delta.obsolete_staged) {
    std::error_code ec;
    fs::remove_all(d, ec);
  }
  if (ChangelogOn() && delta.staged_dir.empty()) return PersistChangelog(delta, checkpoint_dir, bytes);
  // As Restore: the memtable inserts below otherwise count RocksDB's perf counters per key.
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  if (!delta.empty()) {
    // In key order: a table file takes its keys sorted, and RocksDB inserts sorted keys into
    // its memtable about 3x cheaper than random ones (bench: BM_PersistDeltaSorted). Each key
    // is read once here (the keys lie at random in the table's arena); the sort compares the
    // copies of their first 14 bytes, which hold the whole of most keys.
    std::vector<OrderedEntry> order(delta.entries.size());
    for (uint32_t i = 0; i < order.size(); ++i) {
      if (i + 8 < order.size()) __builtin_prefetch(delta.key(delta.entries[i + 8]).data());
      order[i] = OrderedEntry::Of(delta, i);
    }
    SortInKeyOrder(delta, &order);
    if (delta.named.empty()) {
      // The default state only (the word count's): the sorted entries become one table file,
      // ingested, instead of memtable inserts and a flush that writes the same file.
      CAIRN_RETURN_IF_ERROR(IngestSorted(db_, delta, order));
    } else {
      rocksdb::WriteBatch batch;
      std::string key;
      char value[kValueSize];
      for (const OrderedEntry& o : order) {
        const StateDelta::Entry& e = delta.entries[o.index];
        EncodeKeyInto(e.key_group, delta.key(e), &key);
        EncodeValue(e.value, value);
        rocksdb::Status s = e.deleted ? batch.Delete(key) : batch.Put(key, rocksdb::Slice(value, kValueSize));
        if (!s.ok()) return FromRocks(s, "cannot build write batch for", dir_);
      }
      for (const StateDelta::NamedEntry& e : delta.named) {
        rocksdb::ColumnFamilyHandle* cf = nullptr;
        CAIRN_RETURN_IF_ERROR(Family(e.state, &cf));
        rocksdb::Status s = e.deleted ? batch.Delete(cf, e.key) : batch.Put(cf, e.key, e.value);
        if (!s.ok()) return FromRocks(s, "cannot build write batch for", dir_);
      }
      rocksdb::WriteOptions wo;
      wo.disableWAL = true;
      rocksdb::Status s = db_->Write(wo, &batch);
      if (!s.ok()) return FromRocks(s, "cannot write keyed state to", dir_);
      s = FlushFamilies(db_, families_);
      if (!s.ok()) return FromRocks(s, "cannot flush keyed state in", dir_);
    }
  }

  std::string staged = delta.staged_dir;
  if (staged.empty() && options_.shared_dir.empty()) {
    // A whole RocksDB checkpoint, straight into checkpoint_dir.
    CAIRN_RETURN_IF_ERROR(CreateParentDirs(checkpoint_dir));
    rocksdb::Checkpoint* raw = nullptr;
    rocksdb::Status s = rocksdb::Checkpoint::Create(db_, &raw);
    if (!s.ok()) return FromRocks(s, "cannot start a checkpoint of", dir_);
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    s = checkpoint->CreateCheckpoint(checkpoint_dir, /*log_size_for_flush=*/0);
    if (!s.ok()) return FromRocks(s, "cannot create keyed state checkpoint", checkpoint_dir);
    *bytes = FilesSize(checkpoint_dir);
    return Status::OK();
  }
  if (staged.empty()) CAIRN_RETURN_IF_ERROR(Stage(&staged));
  if (options_.shared_dir.empty()) {
    CAIRN_RETURN_IF_ERROR(CreateParentDirs(checkpoint_dir));
    CAIRN_RETURN_IF_ERROR(Rename(staged, checkpoint_dir));
    *bytes = FilesSize(checkpoint_dir);
    return Status::OK();
  }
  return Upload(staged, checkpoint_dir, bytes);
}

// ---- Changelog checkpoints.

bool RocksDbStateStore::ChangelogOn() const {
  return options_.changelog && options_.kind == StateBackendOptions::Kind::kHeap && !options_.shared_dir.empty();
}

std::string RocksDbStateStore::SharedSubdir() const {
  return options_.shared_dir + "/" + fs::path(dir_).filename().string();
}

std::string RocksDbStateStore::SegmentPath(uint64_t seq) const {
  return dir_ + ".changelog/" + ChangelogSegmentName(seq);
}

std::string RocksDbStateStore::SharedPath(const Materialization& m, const std::string& name) const {
  // SST numbers are unique within the database, so an SST kept by several materializations is
  // uploaded once; the other files are rewritten by each.
  if (IsSst(name)) return SharedSubdir() + "/" + token_ + "-" + name;
  return SharedSubdir() + "/" + token_ + "-m" + std::to_string(m.id) + "-" + name;
}

Status RocksDbStateStore::StartChangelog(bool stage, const std::string* snapshot, const std::vector<SharedFileRef>* refs) {
  std::error_code ec;
  fs::remove_all(dir_ + ".changelog", ec);
  CAIRN_RETURN_IF_ERROR(CreateDirs(dir_ + ".changelog"));
  if (stage) CAIRN_RETURN_IF_ERROR(MaterializeOnce({}));
  if (snapshot != nullptr) {
    // Local links to the snapshot's database files (its own and the shared ones it lists) and
    // to its segments: what the checkpoints link into shared/ under this store's names.
    Materialization m;
    m.id = 1;
    m.dir = dir_ + ".restored";
    fs::remove_all(m.dir, ec);
    CAIRN_RETURN_IF_ERROR(CreateDirs(m.dir));
    std::vector<std::string> own;
    CAIRN_RETURN_IF_ERROR(ListDir(*snapshot, &own));
    for (const std::string& name : own) {
      if (name == kSharedListFileName) continue;
      CAIRN_RETURN_IF_ERROR(LinkOrCopy(*snapshot + "/" + name, m.dir + "/" + name));
      m.files.push_back(name);
    }
    std::vector<Segment> seqs;
    for (const SharedFileRef& r : *refs) {
      if (IsChangelogSegmentName(r.name)) {
        seqs.push_back(Segment{++last_seq_, 0});
        CAIRN_RETURN_IF_ERROR(LinkOrCopy(r.path, SegmentPath(seqs.back().seq)));
        seqs.back().bytes = fs::file_size(SegmentPath(seqs.back().seq), ec);
      } else {
        CAIRN_RETURN_IF_ERROR(LinkOrCopy(r.path, m.dir + "/" + r.name));
        m.files.push_back(r.name);
      }
    }
    m.bytes = FilesSize(m.dir);
    MutexLock l(&mu_);
    current_ = std::move(m);
    segments_ = std::move(seqs);
  }
  materializer_ = std::thread([this] { MaterializerLoop(); });
  return Status::OK();
}

void RocksDbStateStore::StopChangelog() {
  stopping_.store(true, std::memory_order_relaxed);
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (materializer_.joinable()) materializer_.join();
}

Status RocksDbStateStore::MaterializeOnce(const std::vector<uint64_t>& seqs) {
  std::vector<std::string> paths;
  for (uint64_t seq : seqs) paths.push_back(SegmentPath(seq));
  // A store being destroyed does not wait for the rest: nothing lists a materialization
  // before it is staged, and the working database goes with the store.
  CAIRN_RETURN_IF_ERROR(ApplySegments(
      db_, paths, [this](std::string_view state, rocksdb::ColumnFamilyHandle** cf) { return Family(std::string(state), cf); },
      &stopping_));
  rocksdb::Status s = FlushFamilies(db_, families_);
  if (!s.ok()) return FromRocks(s, "cannot flush keyed state in", dir_);
  // Not when staging a restored database (no segments): its files are the restored ones.
  if (!seqs.empty()) CAIRN_RETURN_IF_ERROR(CompactSortedRuns());
  CAIRN_CRASH_POINT("materialize.compacted");
  Materialization m;
  CAIRN_RETURN_IF_ERROR(Stage(&m.dir));
  CAIRN_RETURN_IF_ERROR(ListDir(m.dir, &m.files));
  m.bytes = FilesSize(m.dir);
  CAIRN_CRASH_POINT("materialize.staged");
  MutexLock l(&mu_);
  m.id = current_.id + 1;
  m.up_to = seqs.empty() ? current_.up_to : seqs.back();
  if (!current_.dir.empty()) retired_.emplace_back(current_.id, current_.dir);
  current_ = std::move(m);
  return Status::OK();
}

Status RocksDbStateStore::CompactSortedRuns() {
  // Runs: each file of level 0, and each other level that holds files.
  constexpr double kCompactRunsAt = 1.5;
  constexpr size_t kMaxSortedRuns = 4;
  rocksdb::ColumnFamilyMetaData meta;
  db_->GetColumnFamilyMetaData(db_->DefaultColumnFamily(), &meta);
  size_t runs = 0;
  uint64_t total = 0, largest = 0;
  for (const rocksdb::LevelMetaData& level : meta.levels) {
    uint64_t bytes = 0;
    for (const rocksdb::SstFileMetaData& f : level.files) {
      bytes += f.size;
      if (level.level == 0) {
        ++runs;
        largest = std::max<uint64_t>(largest, f.size);
      }
    }
    if (level.level != 0 && bytes != 0) {
      ++runs;
      largest = std::max(largest, bytes);
    }
    total += bytes;
  }
  if (runs < 2 || (static_cast<double>(total) < kCompactRunsAt * static_cast<double>(largest) && runs <= kMaxSortedRuns))
    return Status::OK();
  rocksdb::CompactRangeOptions o;
  o.exclusive_manual_compaction = false;  // RocksDB's own compactions go on meanwhile
  o.canceled = &stopping_;
  rocksdb::Status s = db_->CompactRange(o, db_->DefaultColumnFamily(), nullptr, nullptr);
  if (stopping_.load(std::memory_order_relaxed)) return Status::Aborted("stopped");
  if (!s.ok()) return FromRocks(s, "cannot compact keyed state in", dir_);
  return Status::OK();
}

bool RocksDbStateStore::SizeTriggered() const {
  // Not before this store's first checkpoint: a restore's segments wait until the job runs
  // (the other subtasks may still be loading theirs).
  if (options_.materialize_ratio <= 0 || !checkpointed_) return false;
  uint64_t live = 0;
  for (const Segment& g : segments_)
    if (g.seq > current_.up_to) live += g.bytes;
  const double bound = options_.materialize_ratio * static_cast<double>(current_.bytes);
  return live >= options_.materialize_min_bytes && static_cast<double>(live) > bound;
}

void RocksDbStateStore::MaterializerLoop() {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);  // as Restore: nothing reads them
  const auto interval = std::chrono::milliseconds(options_.materialize_interval_ms);
  uint64_t applied;
  {
    MutexLock l(&mu_);
    applied = current_.up_to;
  }
  bool failed = false;  // the last attempt failed: wait the whole interval before the next
  for (;;) {
    std::vector<uint64_t> seqs;
    {
      MutexLock l(&mu_);
      // Every interval, or as soon as the segments since the last materialization outgrow
      // state.materialize_ratio times its size (PersistChangelog signals).
      const auto deadline = std::chrono::steady_clock::now() + interval;
      while (!stop_ && std::chrono::steady_clock::now() < deadline && (failed || !SizeTriggered()))
        cv_.WaitUntil(&mu_, deadline);
      if (stop_) return;
      for (const Segment& g : segments_)
        if (g.seq > applied) seqs.push_back(g.seq);
    }
    if (seqs.empty()) continue;
    // A failure leaves checkpoints on the previous materialization (with more segments); the
    // segments are applied again next time (their entries are values, not increments).
    failed = !MaterializeOnce(seqs).ok();
    if (!failed) applied = seqs.back();
  }
}

Status RocksDbStateStore::PersistChangelog(const StateDelta& delta, const std::string& checkpoint_dir,
                                           uint64_t* bytes) {
  uint64_t written = 0;
  // Every file and directory below is fsynced once, at the end (DeferredSyncs; the keyed
  // directory: SHARED's rename and its own entry list).
  DeferredSyncs syncs;
  std::optional<Segment> segment;
  if (!delta.empty()) {
    // One sequential write: the delta as it is (each key once, the dirty set coalesced the
    // interval's updates of a hot key). It is the first file `syncs` fsyncs, and joins
    // segments_ (what later checkpoints list) only once that fsync succeeded. Its number is
    // used up all the same: a file that may not be durable is never listed under it.
    const uint64_t seq = ++last_seq_;
    // Encoded into a buffer this persister thread keeps between checkpoints (up to
    // kKeptSegmentBuffer): a fresh one cost a zero-fill and a page fault per 4 KiB of every
    // segment (docs/benchmarks.md, ninth round).
    thread_local std::string buffer;
    const std::string_view data = EncodeChangelogSegment(delta, &buffer);
    const Status written_ok = WriteChecksummedFile(SegmentPath(seq), data, &syncs);
    const size_t data_size = data.size();
    if (buffer.size() > kKeptSegmentBuffer) std::string().swap(buffer);
    CAIRN_RETURN_IF_ERROR(written_ok);
    segment = Segment{seq, data_size + kBlobFooterSize};
    written += segment->bytes;
  }
  CAIRN_CRASH_POINT("persist.changelog_written");
  Materialization m;
  std::vector<uint64_t> live;
  {
    MutexLock l(&mu_);
    m = current_;
    for (const Segment& g : segments_)
      if (g.seq > m.up_to) live.push_back(g.seq);
  }
  if (segment) live.push_back(segment->seq);
  // What this checkpoint lists: every file of the materialization, then the segments since.
  std::vector<SharedFileRef> refs;
  std::vector<std::string> sources;
  for (const std::string& f : m.files) {
    refs.push_back(SharedFileRef{f, SharedPath(m, f)});
    sources.push_back(m.dir + "/" + f);
  }
  for (uint64_t seq : live) {
    const std::string name = ChangelogSegmentName(seq);
    refs.push_back(SharedFileRef{name, SharedSubdir() + "/" + token_ + "-" + name});
    sources.push_back(SegmentPath(seq));
  }
  CAIRN_RETURN_IF_ERROR(CreateDirs(checkpoint_dir));
  {
    // As Upload: the list first, then the files, under the collection's lock. A file a
    // collection removed since an earlier checkpoint failed is linked again from its local copy.
    SharedFilesLock lock;
    CAIRN_RETURN_IF_ERROR(LockShared(&lock));
    CAIRN_RETURN_IF_ERROR(WriteSharedList(checkpoint_dir, refs, &syncs));
    CAIRN_CRASH_POINT("persist.shared_listed");
    const std::string mine = SharedSubdir();
    bool made = false;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (PathExists(refs[i].path)) continue;
      if (!made) {
        CAIRN_RETURN_IF_ERROR(CreateDirs(mine));
        made = true;
        shared_dirs_unsynced_ = true;  // until the fsyncs below succeed, here or next time
      }
      CAIRN_RETURN_IF_ERROR(LinkOrCopy(sources[i], refs[i].path));
      // A segment's bytes were counted when it was written.
      std::error_code ec;
      if (!IsChangelogSegmentName(refs[i].name)) written += fs::file_size(refs[i].path, ec);
    }
    AddSharedDirSyncs(mine, &syncs);
  }
  syncs.AddDir(checkpoint_dir);
  size_t files_synced = 0;
  const Status synced = syncs.SyncAll(&files_synced);
  // The segment's bytes are durable once its fsync, the first, succeeded, and from then on
  // checkpoints list it: a failed fsync of shared/ is made again by the next checkpoint
  // (shared_dirs_unsynced_), and the entry in the working area is not what a restore reads.
  const bool durable = segment && files_synced > 0;
  if (durable || synced.ok()) {
    bool trigger = false;
    {
      MutexLock l(&mu_);
      if (durable) segments_.push_back(*segment);
      checkpointed_ = true;
      trigger = SizeTriggered();
    }
    if (trigger) cv_.SignalAll();
  }
  CAIRN_RETURN_IF_ERROR(synced);
  shared_dirs_unsynced_ = false;
  // Local copies that no later checkpoint lists: the segments m holds and the
  // materializations before m.
  std::vector<std::string> remove;
  {
    MutexLock l(&mu_);
    size_t keep = 0;
    for (const Segment& g : segments_) {
      if (g.seq <= m.up_to) {
        remove.push_back(SegmentPath(g.seq));
      } else {
        segments_[keep++] = g;
      }
    }
    segments_.resize(keep);
    keep = 0;
    for (auto& r : retired_) {
      if (r.first < m.id) {
        remove.push_back(r.second);
      } else {
        retired_[keep++] = std::move(r);
      }
    }
    retired_.resize(keep);
  }
  for (const std::string& path : remove) {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  *bytes = written;
  return Status::OK();
}

// ---- The RocksDB backend's view: every read and write goes to the database.

class RocksDbStateStore::KeyedView : public KeyedStateBackend {
 public:
  KeyedView(RocksDbStateStore* store, uint32_t max_parallelism, KeyGroupRange range)
      : KeyedStateBackend(max_parallelism, range), store_(store), db_(store->db_) {
    wo_.disableWAL = true;
  }

  Status Declare(const StateDescriptor& d, StateId* id) override {
    for (size_t i = 0; i < states_.size(); ++i) {
      if (states_[i].desc.name == d.name) {
        if (!(states_[i].desc == d)) return Mismatch(states_[i].desc, d);
        *id = static_cast<StateId>(i);
        return Status::OK();
      }
    }
    rocksdb::ColumnFamilyHandle* cf = nullptr;
    if (d.name == kDefaultStateName) {
      if (!(d == kDefaultDescriptor)) return Mismatch(kDefaultDescriptor, d);
      cf = db_->DefaultColumnFamily();
    } else {
      for (const auto& [name, h] : store_->families_) {
        StateDescriptor have;
        if (StateDescriptor::Decode(name, &have) && have.name == d.name && !(have == d)) return Mismatch(have, d);
      }
      CAIRN_RETURN_IF_ERROR(store_->Family(d.Encode(), &cf));
    }
    states_.push_back(S{d, cf});
    *id = static_cast<StateId>(states_.size() - 1);
    return Status::OK();
  }

  bool Get(StateId id, std::string_view key, uint64_t hash, std::string_view uk, std::string* value) override {
    if (!Owns(key, hash)) return false;
    const S& s = states_[id];
    key_ = EncodeEntryKey(s.desc.kind, KeyGroupOf(hash, max_parallelism()), key, uk);
    rocksdb::Status st = db_->Get(ro_, s.cf, key_, value);
    if (st.IsNotFound()) return false;
    if (!st.ok()) {
      Error(st);
      return false;
    }
    return true;
  }
  void Put(StateId id, std::string_view key, uint64_t hash, std::string_view uk, std::string_view value) override {
    if (!Owns(key, hash)) return;
    const S& s = states_[id];
    key_ = EncodeEntryKey(s.desc.kind, KeyGroupOf(hash, max_parallelism()), key, uk);
    rocksdb::Status st = db_->Put(wo_, s.cf, key_, rocksdb::Slice(value.data(), value.size()));
    if (!st.ok()) Error(st);
  }
  void Delete(StateId id, std::string_view key, uint64_t hash, std::string_view uk) override {
    if (!Owns(key, hash)) return;
    const S& s = states_[id];
    key_ = EncodeEntryKey(s.desc.kind, KeyGroupOf(hash, max_parallelism()), key, uk);
    rocksdb::Status st = db_->Delete(wo_, s.cf, key_);
    if (!st.ok()) Error(st);
  }
  void ForEachUserKey(StateId id, std::string_view key, uint64_t hash,
                      const std::function<void(std::string_view, std::string_view)>& fn) override {
    if (!Owns(key, hash)) return;
    const S& s = states_[id];
    if (s.desc.kind != StateKind::kMap) return;
    const std::string prefix = EncodeEntryKey(StateKind::kMap, KeyGroupOf(hash, max_parallelism()), key, {});
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro_, s.cf));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next())
      fn(std::string_view(it->key().data() + prefix.size(), it->key().size() - prefix.size()),
         std::string_view(it->value().data(), it->value().size()));
    if (!it->status().ok()) Error(it->status());
  }
  void ForEachEntry(StateId id,
                    const std::function<void(std::string_view, std::string_view, std::string_view)>& fn) override {
    const S& s = states_[id];
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro_, s.cf));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      uint32_t kg;
      std::string_view key, uk;
      if (DecodeEntryKey(s.desc.kind, std::string_view(it->key().data(), it->key().size()), &kg, &key, &uk))
        fn(key, uk, std::string_view(it->value().data(), it->value().size()));
    }
    if (!it->status().ok()) Error(it->status());
  }
  Status Snapshot(std::unique_ptr<StateDelta>* out) override {
    auto delta = std::make_unique<StateDelta>();
    CAIRN_RETURN_IF_ERROR(store_->Stage(&delta->staged_dir));
    *out = std::move(delta);
    return Status::OK();
  }
  size_t size() const override {
    uint64_t total = 0, n = 0;
    if (db_->GetIntProperty(db_->DefaultColumnFamily(), "rocksdb.estimate-num-keys", &n)) total += n;
    for (const auto& [name, h] : store_->families_)
      if (db_->GetIntProperty(h, "rocksdb.estimate-num-keys", &n)) total += n;
    return total;
  }

 private:
  struct S {
    StateDescriptor desc;
    rocksdb::ColumnFamilyHandle* cf;
  };
  static Status Mismatch(const StateDescriptor& have, const StateDescriptor& want) {
    return Status::InvalidArgument("keyed state '" + want.name + "' is a " + StateKindName(have.kind) + " state of " +
                                   have.type + ", not a " + StateKindName(want.kind) + " state of " + want.type);
  }
  void Error(const rocksdb::Status& st) { RecordError(FromRocks(st, "keyed state", store_->dir_)); }

  RocksDbStateStore* const store_;
  rocksdb::DB* const db_;
  std::vector<S> states_;
  rocksdb::ReadOptions ro_;
  rocksdb::WriteOptions wo_;
  std::string key_;
};

std::unique_ptr<KeyedStateBackend> RocksDbStateStore::NewKeyedBackend(uint32_t max_parallelism, KeyGroupRange range) {
  return std::make_unique<KeyedView>(this, max_parallelism, range);
}

// ---- Restore and read.

Status RocksDbStateStore::Restore(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                                  KeyedInt64State* state, std::unique_ptr<RocksDbStateStore>* out) {
  return Restore(snapshots, work_dir, StateBackendOptions{}, state->range(), state, nullptr, out);
}

Status RocksDbStateStore::Restore(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                                  const StateBackendOptions& options, KeyGroupRange range, KeyedInt64State* state,
                                  HeapKeyedStateBackend* named, std::unique_ptr<RocksDbStateStore>* out,
                                  const std::atomic<bool>* stop) {
  for (const KeyedSnapshotHandle& h : snapshots) CAIRN_RETURN_IF_ERROR(CheckSnapshotExists(h.dir));
  CAIRN_RETURN_IF_ERROR(CheckAbsent(work_dir));
  // Nothing reads RocksDB's per-thread perf counters, which it otherwise counts on every
  // iterator step through a thread-local lookup: 8-10% of loading 500K keys (docs/benchmarks.md).
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);

  // Leaves no half-built database behind on failure.
  std::unique_ptr<RocksDbStateStore> store;
  auto fail = [&](Status st) {
    store.reset();
    std::error_code ec;
    fs::remove_all(work_dir, ec);
    return st;
  };

  if (snapshots.size() == 1 && snapshots[0].key_groups == range) {
    // Fast path: same key groups, so the snapshot's files become the working database.
    const std::string& snap = snapshots[0].dir;
    std::vector<SharedFileRef> refs;
    bool incremental = false;
    CAIRN_RETURN_IF_ERROR(ReadSharedList(snap, &refs, &incremental));
    CAIRN_RETURN_IF_ERROR(CreateParentDirs(work_dir));
    Status st = incremental ? Materialize(snap, refs, work_dir) : LinkSnapshotFiles(snap, work_dir);
    if (st.ok() && Stopped(stop)) st = RestoreStopped(snap);
    if (!st.ok()) return fail(st);
    // Compactions wait until the state is loaded: one that a restored level 0 starts as the
    // database opens took a third of the CPU of a restore on 2 cores, and the restore twice as
    // long (docs/benchmarks.md, twenty-fourth round). With them off, level 0 stalls no writes.
    rocksdb::Options restore_options = WorkDbOptions(options);
    restore_options.disable_auto_compactions = true;
    auto db = std::make_unique<OpenedDb>();
    rocksdb::Status s = OpenFamilies(restore_options, work_dir, /*read_only=*/false, db.get());
    if (!s.ok()) return fail(FromRocks(s, "cannot open restored keyed state database", work_dir));
    // The heap backend with changelog loads the segments into memory only: its materializer
    // applies them to the database (in the background, before the next materialization).
    // Otherwise the database must hold them before anything is read or written.
    const bool heap_changelog = options.changelog && options.kind == StateBackendOptions::Kind::kHeap &&
                                !options.shared_dir.empty() && state != nullptr && named != nullptr;
    if (!heap_changelog) {
      st = ApplySegments(
          db->db, SegmentPaths(refs),
          [&](std::string_view name, rocksdb::ColumnFamilyHandle** cf) {
            return OpenedFamily(db.get(), restore_options, name, cf);
          },
          stop);
      if (Stopped(stop)) st = RestoreStopped(snap);
      if (!st.ok()) return fail(st);
    }
    std::string newest_segment;
    if (heap_changelog) {
      st = AdoptNewestSegmentOrder(SegmentPaths(refs), state, &newest_segment);
      if (!st.ok()) return fail(st);
    }
    // The table sized once from RocksDB's estimate of the keys, not doubled while loading.
    uint64_t estimate = 0;
    if (state != nullptr && db->db->GetIntProperty(db->handles[0], "rocksdb.estimate-num-keys", &estimate))
      state->Reserve(static_cast<size_t>(estimate));
    st = LoadAll(db.get(), snap, range, state, named, stop);
    if (st.ok() && heap_changelog)
      st = LoadSegments(SegmentPaths(refs), std::move(newest_segment), snap, range, state, named, stop);
    if (!st.ok()) return fail(st);
    for (rocksdb::ColumnFamilyHandle* h : db->handles) {
      s = db->db->SetOptions(h, {{"disable_auto_compactions", "false"}});
      if (!s.ok()) return fail(FromRocks(s, "cannot start compactions of restored keyed state database", work_dir));
    }
    // Hand the database over to the store.
    store.reset(new RocksDbStateStore(work_dir, db->db, options));
    for (size_t f = 1; f < db->handles.size(); ++f) store->families_.emplace(db->names[f], db->handles[f]);
    if (!db->handles.empty()) db->db->DestroyColumnFamilyHandle(db->handles[0]);
    db->handles.clear();
    db->db = nullptr;
    // Files this checkpoint already holds in our shared directory are referenced, not uploaded again.
    if (!options.shared_dir.empty())
      for (const SharedFileRef& r : refs)
        if (r.path.compare(0, options.shared_dir.size() + 1, options.shared_dir + "/") == 0)
          store->uploaded_.emplace(r.name, r.path);
    if (store->ChangelogOn()) {
      // The restored snapshot's files are the first materialization and its segments the
      // first segments: nothing is rewritten before the first checkpoint.
      st = store->StartChangelog(/*stage=*/false, &snap, &refs);
      if (!st.ok()) return fail(st);
    }
    *out = std::move(store);
    return Status::OK();
  }

  // Rescale path: copy the entries of our key groups out of every overlapping snapshot.
  // The changelog starts once the restored entries are in (and materialized).
  Status st = Create(work_dir, options, /*start_changelog=*/false, &store);
  if (!st.ok()) return fail(st);
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::WriteBatch batch;
  auto write_batch = [&]() -> Status {
    if (batch.Count() == 0) return Status::OK();
    rocksdb::Status s = store->db_->Write(wo, &batch);
    if (!s.ok()) return FromRocks(s, "cannot write restored keyed state to", work_dir);
    batch.Clear();
    return Status::OK();
  };
  const std::string seek_key = EncodeKey(range.first, {});
  const std::string temp_parent = fs::path(work_dir).parent_path().string();
  size_t n = 0;
  for (const KeyedSnapshotHandle& h : snapshots) {
    if (!h.key_groups.Overlaps(range)) continue;
    if (Stopped(stop)) return fail(RestoreStopped(h.dir));
    OpenedDb snap;
    st = OpenSnapshot(h.dir, temp_parent, &snap);
    if (!st.ok()) return fail(st);
    for (size_t f = 0; f < snap.handles.size(); ++f) {
      const bool is_default = f == 0;
      rocksdb::ColumnFamilyHandle* target = store->db_->DefaultColumnFamily();
      if (!is_default) {
        StateDescriptor d;
        if (!StateDescriptor::Decode(snap.names[f], &d))
          return fail(Status::Corruption("keyed state snapshot " + h.dir + " holds an unknown state '" + snap.names[f] + "'"));
        st = store->Family(snap.names[f], &target);
        if (!st.ok()) return fail(st);
      }
      // The default state's entries (in key order) become one ingested table file per snapshot;
      // named states' go through write batches.
      DefaultStateIngest ingest(store->db_, "restore");
      std::unique_ptr<rocksdb::Iterator> it(snap.db->NewIterator(ScanOptions(), snap.handles[f]));
      for (it->Seek(seek_key); it->Valid(); it->Next()) {
        if (++n % kRestoreBatchEntries == 0 && Stopped(stop)) return fail(RestoreStopped(h.dir));
        uint32_t kg;
        std::string_view key;
        int64_t value = 0;
        if (is_default) {
          st = DecodeEntry(it->key(), it->value(), h.dir, &kg, &key, &value);
          if (!st.ok()) return fail(st);
        } else {
          if (it->key().size() < kKeyGroupPrefixSize)
            return fail(Status::Corruption("keyed state " + h.dir + ": malformed entry in " + snap.names[f]));
          const auto* kp = reinterpret_cast<const unsigned char*>(it->key().data());
          kg = (static_cast<uint32_t>(kp[0]) << 8) | kp[1];
        }
        if (kg > range.last) break;
        if (is_default) {
          if (state != nullptr) state->LoadEntry(key, value);
        } else if (named != nullptr) {
          st = named->LoadNamed(snap.names[f], std::string_view(it->key().data(), it->key().size()),
                                std::string_view(it->value().data(), it->value().size()));
          if (!st.ok()) return fail(st.WithContext("keyed state snapshot " + h.dir));
        }
        if (is_default) {
          st = ingest.AddStored(it->key(), it->value());
          if (!st.ok()) return fail(st);
          continue;
        }
        rocksdb::Status s = batch.Put(target, it->key(), it->value());
        if (!s.ok()) return fail(FromRocks(s, "cannot build write batch for", work_dir));
        if (batch.Count() >= kRestoreBatchEntries) {
          st = write_batch();
          if (!st.ok()) return fail(st);
        }
      }
      if (!it->status().ok()) return fail(snap.Translate(FromRocks(it->status(), "cannot read keyed state snapshot", h.dir)));
      st = ingest.Finish();
      if (!st.ok()) return fail(st);
    }
  }
  st = write_batch();
  if (!st.ok()) return fail(st);
  rocksdb::Status s = FlushFamilies(store->db_, store->families_);
  if (!s.ok()) return fail(FromRocks(s, "cannot flush restored keyed state in", work_dir));
  if (store->ChangelogOn()) {
    st = store->StartChangelog(/*stage=*/true);
    if (!st.ok()) return fail(st);
  }
  *out = std::move(store);
  return Status::OK();
}

namespace {

Status ReadDefaultEntries(OpenedDb& db, const std::string& dir,
                          const std::function<void(uint32_t key_group, std::string_view key, int64_t value)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(rocksdb::ReadOptions(), db.handles[0]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint32_t kg;
    std::string_view key;
    int64_t value;
    CAIRN_RETURN_IF_ERROR(DecodeEntry(it->key(), it->value(), dir, &kg, &key, &value));
    fn(kg, key, value);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot read keyed state snapshot", dir);
  return Status::OK();
}

Status ReadEveryState(OpenedDb& db, const std::string& dir, const StateEntryFn& fn) {
  for (size_t f = 0; f < db.handles.size(); ++f) {
    StateDescriptor d;
    if (!FamilyDescriptor(db.names[f], &d))
      return Status::Corruption("keyed state snapshot " + dir + " holds an unknown state '" + db.names[f] + "'");
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(rocksdb::ReadOptions(), db.handles[f]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      StateEntry e{&d, 0, {}, {}, std::string_view(it->value().data(), it->value().size())};
      if (f == 0) {
        int64_t unused;
        CAIRN_RETURN_IF_ERROR(DecodeEntry(it->key(), it->value(), dir, &e.key_group, &e.key, &unused));
      } else if (!DecodeEntryKey(d.kind, std::string_view(it->key().data(), it->key().size()), &e.key_group, &e.key,
                                 &e.user_key)) {
        return Status::Corruption("keyed state " + dir + ": malformed entry in " + db.names[f]);
      }
      fn(e);
    }
    if (!it->status().ok()) return FromRocks(it->status(), "cannot read keyed state snapshot", dir);
  }
  return Status::OK();
}

}  // namespace

Status RocksDbStateStore::ReadSnapshot(
    const std::string& dir, const std::function<void(uint32_t key_group, std::string_view key, int64_t value)>& fn) {
  OpenedDb db;
  CAIRN_RETURN_IF_ERROR(OpenSnapshot(dir, "", &db));
  return db.Translate(ReadDefaultEntries(db, dir, fn));
}

Status RocksDbStateStore::ReadStates(const std::string& dir, const StateEntryFn& fn) {
  OpenedDb db;
  CAIRN_RETURN_IF_ERROR(OpenSnapshot(dir, "", &db));
  return db.Translate(ReadEveryState(db, dir, fn));
}

Status RocksDbStateStore::VerifySnapshot(const std::string& dir) {
  CAIRN_RETURN_IF_ERROR(CheckSnapshotExists(dir));
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  CAIRN_RETURN_IF_ERROR(ReadSharedList(dir, &refs, &incremental));
  OpenedDb db;
  std::string open_dir = dir;
  if (incremental) {
    // The database files linked into a temporary directory (every listed file must exist);
    // the segments are read where they are.
    CAIRN_RETURN_IF_ERROR(MakeTempDir("", &db.temp_dir));
    db.snapshot_dir = dir;
    db.shared = refs;
    CAIRN_RETURN_IF_ERROR(Materialize(dir, refs, db.temp_dir));
    open_dir = db.temp_dir;
    // Each segment: its checksum and its entries' shape, not applied anywhere.
    std::string bytes;
    for (const std::string& path : SegmentPaths(refs)) {
      CAIRN_RETURN_IF_ERROR(ReadChangelogSegment(path, &bytes, [&path](const ChangelogEntry& e) -> Status {
        StateDescriptor d;
        if (!e.state.empty() && !StateDescriptor::Decode(e.state, &d))
          return Status::Corruption("changelog segment " + path + " holds an unknown state '" + std::string(e.state) + "'");
        if (!e.state.empty() && e.key.size() < kKeyGroupPrefixSize)
          return Status::Corruption("changelog segment " + path + ": malformed entry");
        return Status::OK();
      }));
    }
    // A changelog checkpoint taken before the first materialization has no database.
    if (!PathExists(open_dir + "/CURRENT")) return Status::OK();
  }
  rocksdb::Status s = OpenFamilies(ReadOnlyOptions(), open_dir, /*read_only=*/true, &db);
  if (!s.ok()) return db.Translate(FromRocks(s, "cannot open keyed state snapshot", dir));
  for (const std::string& name : db.names) {
    StateDescriptor d;
    if (!FamilyDescriptor(name, &d))
      return Status::Corruption("keyed state snapshot " + dir + " holds an unknown state '" + name + "'");
  }
  // Every block of every SST file read and its checksum checked, nothing decoded.
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = kScanReadahead;
  s = db.db->VerifyChecksum(ro);
  if (!s.ok()) return db.Translate(FromRocks(s, "keyed state snapshot is damaged:", dir));
  return Status::OK();
}

Status RocksDbStateStore::WriteFullSnapshot(const std::string& dir, const std::string& target) {
  OpenedDb db;
  CAIRN_RETURN_IF_ERROR(OpenSnapshot(dir, "", &db));
  if (!db.writable)  // opened in place or read-only: already a whole database
    return Status::Internal("keyed state snapshot " + dir + " needs no rewrite");
  rocksdb::FlushOptions fo;
  fo.wait = true;
  rocksdb::Status s = db.db->Flush(fo, db.handles);
  if (!s.ok()) return db.Translate(FromRocks(s, "cannot flush keyed state read from", dir));
  rocksdb::Checkpoint* raw = nullptr;
  s = rocksdb::Checkpoint::Create(db.db, &raw);
  if (!s.ok()) return FromRocks(s, "cannot start a checkpoint of", dir);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  s = checkpoint->CreateCheckpoint(target, /*log_size_for_flush=*/0);
  if (!s.ok()) return FromRocks(s, "cannot write keyed state snapshot", target);
  // The checkpoint hard-links the temporary database's SST files: its files become the
  // target's own when the temporary directory is removed.
  return FsyncDir(target);
}

}  // namespace cairn
